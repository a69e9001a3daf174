"""The benchmark scenarios of issue 5, each a series of measured processes.

Every refresh is ``benchmarks.probe``: the real ``refresh`` job, in its own process, against a
synthetic mirror directory (or the same mirror served by ``tests/fake_github/`` when the
requests are what is measured). Mirrors are generated once per setting and cached in the work
directory; warehouses are rebuilt per repeat.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.process import Measured, run_step
from benchmarks.synthetic import Settings, generate, revisions_for
from liger_warehouse.lake.location import CATALOG_FILE, DATA_DIR
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views

ROOT = Path(__file__).resolve().parent.parent
# Dagster's defaults (runs and logs in SQLite under the home), telemetry off, as the CLI writes it.
DAGSTER_CONFIG = "telemetry:\n  enabled: false\n"


@dataclass(frozen=True)
class Bench:
    work: Path
    repeats: int
    rows_per_revision: int
    gh_pages_fraction: float
    seed: int
    rss_cap: int | None

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    def settings(self, revisions: int) -> Settings:
        return Settings(revisions, self.rows_per_revision, self.seed, self.gh_pages_fraction)


# -- mirrors -----------------------------------------------------------------------------------


def mirror(b: Bench, revisions: int) -> tuple[Path, dict]:
    """The synthetic mirror of ``revisions`` revisions, generated once and kept."""
    s = b.settings(revisions)
    path = b.work / "mirrors" / f"r{revisions}-m{s.rows_per_revision}-f{s.gh_pages_fraction}-s{s.seed}"
    done = path / ".stats.json"
    if not done.is_file():
        shutil.rmtree(path, ignore_errors=True)
        stats = asdict(generate(path, s))
        stats.pop("files")
        done.write_text(json.dumps(stats))
    return path, json.loads(done.read_text())


def mirror_plus_one(b: Bench, revisions: int) -> Path:
    """The mirror of ``revisions`` plus the next revision (a nightly run), sharing the older
    files with it through hard links."""
    base, _ = mirror(b, revisions)
    path = base.with_name(base.name + "-plus1")
    if not (path / ".complete").is_file():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path, copy_function=os.link, ignore=shutil.ignore_patterns(".stats.json"))
        generate(path, b.settings(revisions + 1), write_from=revisions)
        (path / ".complete").write_text("")
    return path


# -- one refresh -------------------------------------------------------------------------------


def _env(warehouse: Path, upstream: str, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home)}
    env |= {"LIGER_WAREHOUSE_DIR": str(warehouse), "LIGER_WAREHOUSE_UPSTREAM": upstream}
    return env | (extra or {})


def parquet_files(warehouse: Path) -> dict[str, tuple[int, int]]:
    """Every Parquet file of the lake's data directory, by its path there: (size, mtime)."""
    data = warehouse / DATA_DIR
    return {p.relative_to(data).as_posix(): _size_and_mtime(p) for p in data.rglob("*.parquet")}


def _size_and_mtime(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def written_by_table(before: dict, after: dict) -> dict[str, int]:
    """Bytes of new or rewritten Parquet files per table: DuckLake writes ``<schema>/<table>/<file>``,
    or ``<schema>/<table>/<key>=<value>/<file>`` for a partitioned table."""
    out: dict[str, int] = {}
    for path, (size, mtime) in after.items():
        if before.get(path) != (size, mtime):
            table = path.split("/")[1]
            out[table] = out.get(table, 0) + size
    return out


def refresh(b: Bench, warehouse: Path, upstream: str, extra_env: dict[str, str] | None = None) -> dict:
    """One measured refresh: wall, Dagster start-up, job time, per-step time and peak memory."""
    home = warehouse.with_name(warehouse.name + ".dagster")
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(DAGSTER_CONFIG)
    before = parquet_files(warehouse) if warehouse.exists() else {}
    m = run_step("benchmarks.probe", [], b.logs, _env(warehouse, upstream, home, extra_env), b.rss_cap)
    return _refresh_record(m, before, warehouse, home)


def logged_steps(home: Path) -> list[dict]:
    """Step times of the newest run in a Dagster home's event log: what a probe that was
    killed (memory cap) could not report itself."""
    runs = sorted((home / "history" / "runs").glob("*-*.db"), key=lambda p: p.stat().st_mtime)
    if not runs:
        return []
    with closing(sqlite3.connect(f"file:{runs[-1]}?mode=ro", uri=True)) as con:
        events = con.execute(
            "select dagster_event_type, step_key, timestamp from event_logs "
            "where dagster_event_type in ('STEP_START', 'STEP_SUCCESS', 'STEP_FAILURE') order by id"
        ).fetchall()
    starts, steps = {}, []
    for kind, key, stamp in events:
        when = datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
        if kind == "STEP_START":
            starts[key] = when
        elif key in starts:
            steps.append({"step": key, "start": starts.pop(key), "end": when})
    last = max((t for _, _, t in events), default=None)
    steps += [{"step": k, "start": t, "end": float("inf"), "unfinished": True} for k, t in starts.items()]
    return steps if last else []


def _refresh_record(m: Measured, before: dict, warehouse: Path, home: Path) -> dict:
    out = m.output
    steps = [
        {
            "step": s["step"],
            "seconds": min(s["end"], m.samples[-1][0] if m.samples else s["end"]) - s["start"],
            "peak_rss": m.peak_between(s["start"], s["end"]),
            **({"unfinished": True} if s.get("unfinished") else {}),
        }
        for s in out.get("steps") or logged_steps(home)
    ]
    lake = lake_state(warehouse)
    by_table = written_by_table(before, parquet_files(warehouse))
    return {
        "ok": m.ok,
        "error": m.error,
        "wall": m.wall,
        "startup": out.get("startup"),
        "job": out.get("job"),
        "peak_rss": m.peak_rss,
        "steps": steps,
        "upstream": out.get("upstream", {}),
        "published": out.get("published"),
        **lake,
        "parquet_written": sum(by_table.values()),
        "parquet_written_by_table": by_table,
        # Tree RSS once a second, for reading a run's memory against its steps afterwards.
        "rss_timeline": [(round(t, 1), rss) for i, (t, rss) in enumerate(m.samples) if i % 20 == 0],
    }


def lake_state(warehouse: Path) -> dict:
    """Rows of the facts, the newest snapshot and its refresh summary, and the bytes of the lake's
    data directory (every file, those of replaced tables too until maintenance removes them)."""
    data = warehouse / DATA_DIR
    out = {"results": 0, "members": 0, "snapshot": None, "summary": {}}
    out["lake_bytes"] = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    catalog = warehouse / CATALOG_FILE
    if not catalog.is_file():
        return out
    with open_views(catalog) as con:
        (snapshot, info) = con.execute(
            "select snapshot_id, commit_extra_info from ducklake_snapshots('liger') order by snapshot_id desc limit 1"
        ).fetchone()
        if info is None:  # nothing was ever published: the catalog holds no table yet
            return out | {"snapshot": snapshot}
        results, members = con.execute(
            "select (select count(*) from fact_result), (select count(*) from fact_revision_member)"
        ).fetchone()
    summary = {k: v for k, v in json.loads(info).items() if k.startswith("results_")}
    return out | {"results": results, "members": members, "snapshot": snapshot, "summary": summary}


def copy_warehouse(source: Path, target: Path) -> None:
    """A full copy (not links): other steps may write files in place."""
    for src, dst in ((source, target), (_home(source), _home(target))):
        shutil.rmtree(dst, ignore_errors=True)
        if src.exists():
            shutil.copytree(src, dst, symlinks=True)


def _home(warehouse: Path) -> Path:
    return warehouse.with_name(warehouse.name + ".dagster")


def remove_warehouse(warehouse: Path) -> None:
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(_home(warehouse), ignore_errors=True)


# -- the scenarios -----------------------------------------------------------------------------


def raw_limit(b: Bench, mirror_dir: Path) -> dict:
    out = b.work / "raw-limit.parquet"
    m = run_step("benchmarks.raw_limit", ["--mirror", str(mirror_dir), "--out", str(out)], b.logs, rss_cap=b.rss_cap)
    return {"ok": m.ok, "error": m.error, "wall": m.wall, "peak_rss": m.peak_rss, **m.output}


def full_build(b: Bench, results: int) -> dict:
    """Build from nothing, beside DuckDB's raw copy of the same files, ``repeats`` times.

    The last warehouse is kept (``warehouses/full-<results>``) for the view latencies.
    """
    revisions = revisions_for(results, b.rows_per_revision, b.gh_pages_fraction)
    mirror_dir, stats = mirror(b, revisions)
    warehouse = b.work / "warehouses" / f"full-{results}"
    runs = []
    for i in range(b.repeats):
        remove_warehouse(warehouse)
        build = refresh(b, warehouse, str(mirror_dir))
        runs.append({"build": build, "raw": raw_limit(b, mirror_dir)})
        if not build["ok"] and i + 1 < b.repeats:
            break  # a failing build fails again; report it rather than repeat it
    return {
        "target_results": results,
        "revisions": revisions,
        "mirror": stats,
        "runs": runs,
        "warehouse": str(warehouse),
    }


def no_change(b: Bench, warehouse: Path, mirror_dir: Path) -> list[dict]:
    """Refreshes with nothing new upstream, through a fake GitHub serving the mirror: the first
    fills the listings' ETag cache (its requests are listed for completeness), the rest are the
    measured nightly case."""
    runs = []
    with FakeGitHub(mirror_dir) as fake:
        extra = {"LIGER_WAREHOUSE_GITHUB_API": fake.api_base, "LIGER_WAREHOUSE_GITHUB_RAW": fake.raw_base}
        for i in range(b.repeats + 1):
            fake.clear_log()
            run = refresh(b, warehouse, "github:linkedin/Liger-Kernel", extra)
            log = fake.requests
            run |= {
                "warm_up": i == 0,
                "requests": len(log),
                "not_modified": sum(1 for r in log if r.status == 304),
                "content_requests": len(fake.content_requests()),
                "content_bytes": sum(r.body_bytes for r in fake.content_requests()),
                "body_bytes": fake.bytes_sent(),
            }
            runs.append(run)
    return runs


def incremental(b: Bench, history: int) -> dict:
    """One new nightly run on a history of ``history`` revisions, ``repeats`` times, each on a
    fresh copy of the same warehouse; plus the no-change refreshes of that warehouse."""
    base_mirror, stats = mirror(b, history)
    plus = mirror_plus_one(b, history)
    base = b.work / "warehouses" / f"history-{history}"
    remove_warehouse(base)
    setup = refresh(b, base, str(base_mirror))
    record = {"history": history, "mirror": stats, "setup": setup, "runs": [], "no_change": []}
    if not setup["ok"]:
        return record
    record["no_change"] = no_change(b, base, base_mirror)
    target = b.work / "warehouses" / f"history-{history}-copy"
    for _ in range(b.repeats):
        copy_warehouse(base, target)
        record["runs"].append(refresh(b, target, str(plus)))
    remove_warehouse(target)
    remove_warehouse(base)
    return record


def views(b: Bench, warehouse: Path) -> dict:
    args = ["--warehouse", str(warehouse), "--repeats", str(b.repeats)]
    m = run_step("benchmarks.views", args, b.logs, rss_cap=b.rss_cap)
    return {"ok": m.ok, "error": m.error, "peak_rss": m.peak_rss, **m.output}
