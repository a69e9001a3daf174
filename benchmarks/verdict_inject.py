"""Known changes for the verdict benchmark: a copy of a real gh-pages run with seeded slowdowns
and speedups (and optionally a host drift on every speed row), added to a copy of the mirror as
the run right after it, and a warehouse refreshed over it by the real ``refresh`` job.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb

from benchmarks.probe import QUIET_LOGS
from benchmarks.verdict_data import Series
from liger_warehouse import settings
from liger_warehouse.lake.location import CATALOG_FILE
from liger_warehouse.upstream.sources import RUNS_PATH, run_path
from tests.conftest import env
from tests.plain_duckdb import open_views

SLOWER, FASTER = 1.25, 0.8
SLOWER_SHARE, FASTER_SHARE = 0.10, 0.05
DRIFT = 1.08
SCOPES = ("workload", "sweep")
VALUE_COLUMNS = ("y_value_50", "y_value_20", "y_value_80")


@dataclass(frozen=True)
class Injection:
    """The Liger series made slower (x1.25) and faster (x0.8) in the injected run."""

    slower: frozenset[str]
    faster: frozenset[str]

    def truth(self, series_digest: str) -> str:
        if series_digest in self.slower:
            return "slower"
        return "faster" if series_digest in self.faster else "untouched"

    def factor(self, series_digest: str | None) -> float:
        if series_digest in self.slower:
            return SLOWER
        return FASTER if series_digest in self.faster else 1.0


def choose(run_series: dict[str, Series], scope: str, seed: int) -> Injection:
    """10% of the Liger series (``scope`` 'workload') or of the Liger sweeps (every workload of
    them, ``scope`` 'sweep') to slow down and another 5% to speed up, drawn with ``seed``."""
    liger = sorted(d for d, s in run_series.items() if s.is_liger)
    if scope == "workload":
        units = [[d] for d in liger]
    elif scope == "sweep":
        sweeps: dict[str, list[str]] = {}
        for digest in liger:
            sweeps.setdefault(run_series[digest].sweep_key, []).append(digest)
        units = [sweeps[key] for key in sorted(sweeps)]
    else:
        raise ValueError(f"scope must be one of {SCOPES}, not {scope!r}")
    slow, fast = round(SLOWER_SHARE * len(units)), round(FASTER_SHARE * len(units))
    picked = random.Random(seed).sample(units, slow + fast)
    return Injection(
        frozenset(d for unit in picked[:slow] for d in unit), frozenset(d for unit in picked[slow:] for d in unit)
    )


def line_series(con: duckdb.DuckDBPyConnection, run: str) -> dict[int, str]:
    """The series of each data line of ``run``'s current benchmark.csv (its line number)."""
    rows = con.execute(
        """
        select m.line_number, f.series_digest
        from fact_revision_member as m
        join dim_upstream_revision as r using (revision_digest)
        join fact_result as f using (result_digest)
        where r.source = 'gh-pages' and r.run = ? and r.is_head
        """,
        [run],
    ).fetchall()
    return dict(rows)


def injected_csv(original: bytes, lines: dict[int, str], injection: Injection, drift: float) -> bytes:
    """``original`` (a run's benchmark.csv) with p20, p50 and p80 of the injected series scaled,
    and every speed row (any provider) also scaled by ``drift``. Other bytes are kept as written,
    line ends included."""
    text = original.decode("utf-8")
    ending = "\r\n" if "\r\n" in text else "\n"
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    values = [header.index(c) for c in VALUE_COLUMNS]
    metric = header.index("metric_name")
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator=ending)
    writer.writerow(header)
    touched: set[str] = set()
    for row in reader:
        digest = lines.get(reader.line_num)
        factor = injection.factor(digest) * (drift if row and row[metric] == "speed" else 1.0)
        if factor != 1.0 and digest is not None:
            for i in values:
                row[i] = repr(float(row[i]) * factor)
            touched.add(digest)
        writer.writerow(row)
    missing = (injection.slower | injection.faster) - touched
    if missing:
        raise RuntimeError(f"{len(missing)} injected series have no row in the copied run")
    written = out.getvalue()
    # Keep the file's own ending: upstream files may end without a line break.
    return (written if text.endswith(ending) else written.removesuffix(ending)).encode("utf-8")


def copy_mirror(source: Path, target: Path) -> Path:
    """A writable copy of a mirror directory (the shared mirror is read-only)."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / path.relative_to(source))
    return target


def _relisted(mirror: Path, target: Path, runs: Callable[[list[str]], list[str]]) -> Path:
    """``mirror`` hard-linked into ``target`` with its gh-pages run list replaced by ``runs(list)``."""
    shutil.copytree(mirror, target, copy_function=os.link)
    listing = target / "gh-pages" / RUNS_PATH
    names = listing.read_text().split()
    listing.unlink()  # a hard link: the shared mirror copy keeps its list
    listing.write_text("\n".join(runs(names)) + "\n")
    return target


def mirror_until(mirror: Path, target: Path, last: str) -> Path:
    """``mirror`` (hard-linked) with its gh-pages run list cut after ``last``, so that a run appended
    comes right after it (the main-branch revisions and compare files stay: a refresh reads the
    compares of listed runs only)."""
    return _relisted(mirror, target, lambda names: names[: names.index(last) + 1])


def mirror_with_run(mirror: Path, target: Path, run: str, csv_bytes: bytes) -> Path:
    """``mirror`` (hard-linked) with ``run`` appended to commits.txt and its benchmark.csv.gz."""
    _relisted(mirror, target, lambda names: [*names, run])
    path = target / "gh-pages" / f"{run_path(run)}.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(csv_bytes, mtime=0))
    return target


def injected_warehouse(
    history: Path, head_warehouse: Path, work: Path, run: str, csv_bytes: bytes
) -> tuple[Path, float]:
    """A copy of ``head_warehouse`` refreshed over ``history`` with ``run`` (``csv_bytes``) after
    its newest run, both kept under ``work``: the warehouse and the refresh's seconds."""
    upstream = mirror_with_run(history, work / "mirror", run, csv_bytes)
    warehouse = work / "warehouse"
    shutil.copytree(head_warehouse, warehouse)
    clock = time.perf_counter()
    refresh(warehouse, upstream)
    return warehouse, time.perf_counter() - clock


def refresh(root: Path, upstream: Path) -> None:
    """One run of the real ``refresh`` job of warehouse ``root`` over mirror ``upstream``, in
    this process; raises unless it succeeded and rejected no upstream file."""
    from pipelines.definitions import load

    with (
        env(**{settings.WAREHOUSE_DIR: str(root), settings.UPSTREAM: str(upstream)}),
        dg.DagsterInstance.ephemeral() as instance,
    ):
        result = (
            load()
            .resolve_job_def("refresh")
            .execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET_LOGS)
        )
    if not result.success:
        failed = [e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
        raise RuntimeError(f"refresh of {root} over {upstream} failed: steps {failed}")
    with open_views(root / CATALOG_FILE) as con:
        (info,) = con.execute(
            "select commit_extra_info from ducklake_snapshots('liger') order by snapshot_id desc limit 1"
        ).fetchone()
    rejected = json.loads(info or "{}").get("rejected", [])
    if rejected:
        raise RuntimeError(f"refresh of {root} rejected upstream files: {rejected}")
