"""The synthetic upstream generator, and a small run of the benchmark suite so its scripts keep
working (issue 5). The full-size run is ``python -m benchmarks.run`` (docs/PERFORMANCE.md; it writes
docs/BENCHMARK-OUTPUT.md)."""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import itertools
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks import run, scenarios, startup, view_latency, views
from benchmarks.sections import markers
from benchmarks.synthetic import Settings, generate
from benchmarks.synthetic.suite import load_suite
from liger_warehouse.audit import checks
from liger_warehouse.build.publish import PHASES
from liger_warehouse.lake.location import CATALOG_FILE
from liger_warehouse.normalize.csvfile import COLUMNS
from liger_warehouse.runtime import progress
from tests.conftest import MIRROR
from tests.plain_duckdb import open_views
from tests.recount import recount

SMALL = Settings(revisions=24, rows_per_revision=400, seed=7, gh_pages_fraction=0.75)


@pytest.fixture(scope="module")
def small_mirror(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synthetic")
    generate(out, SMALL)
    return out


def _csv_files(mirror: Path) -> list[Path]:
    return sorted(mirror.glob("raw/*/benchmark/data/*.csv.gz")) + sorted(mirror.glob("gh-pages/benchmarks/*/*.csv.gz"))


def _rows(path: Path) -> list[list[str]]:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    return [r for r in csv.reader(io.StringIO(text, newline="")) if r]


def _rewritten(path: Path) -> tuple[bytes, bytes]:
    """The file, and the file written again from its parsed rows the way pandas writes CSV."""
    data = gzip.decompress(path.read_bytes())
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(_rows(path))
    again = out.getvalue().encode("utf-8")
    # Upstream quirks, kept by the generator at upstream's rate: a trailing blank line, no final EOL.
    return data.rstrip(b"\r\n"), again.rstrip(b"\r\n")


def test_files_are_written_as_upstream_writes_them(small_mirror):
    files = _csv_files(small_mirror)
    assert files
    for path in files:
        data, again = _rewritten(path)
        assert data == again, path
        assert tuple(_rows(path)[0]) == COLUMNS
        assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    real = sorted(MIRROR.glob("gh-pages/benchmarks/*/*.csv.gz"))[:3]
    for path in real:  # the same writer describes the real files
        assert _rewritten(path)[0] == _rewritten(path)[1]


def test_same_seed_same_bytes_and_a_longer_history_extends_a_shorter_one(small_mirror, tmp_path):
    again = tmp_path / "again"
    generate(again, replace(SMALL, revisions=SMALL.revisions + 1))
    for path in _csv_files(small_mirror):
        assert (again / path.relative_to(small_mirror)).read_bytes() == path.read_bytes()
    assert len(_csv_files(again)) == len(_csv_files(small_mirror)) + 1
    other = tmp_path / "other"
    generate(other, replace(SMALL, seed=8))
    assert {p.name for p in (other / "raw").iterdir()} != {p.name for p in (small_mirror / "raw").iterdir()}


def test_history_looks_like_upstream(small_mirror):
    suite = load_suite()
    rows = [r for path in _csv_files(small_mirror) for r in _rows(path)[1:]]
    assert {r[0] for r in rows} <= {g.kernel for g in suite.groups}
    assert {(r[1], r[2], r[3], r[4]) for r in rows} <= {(g.provider, g.mode, g.metric, g.unit) for g in suite.groups}
    assert {r[12] for r in rows} <= set(suite.gpus)
    assert all(float(r[9]) <= float(r[8]) <= float(r[10]) for r in rows)
    assert len({r[14] for r in rows}) > 1  # releases advance
    runs = (small_mirror / "gh-pages/benchmarks/commits.txt").read_text().split()
    assert len(runs) == 18
    for name in runs:  # a nightly run is one GPU
        assert len({r[12] for r in _rows(small_mirror / f"gh-pages/benchmarks/{name}/benchmark.csv.gz")[1:]}) == 1
    commits = json.loads((small_mirror / "commits/all_benchmark_data.json").read_text())
    main = "benchmark/data/all_benchmark_data.csv.gz"
    files = [{tuple(r) for r in _rows(small_mirror / "raw" / c["sha"] / main)[1:]} for c in reversed(commits)]
    changes = [(len(b - a), len(a - b)) for a, b in itertools.pairwise(files)]
    assert any(added and removed for added, removed in changes)  # restatements ...
    assert any(added and not removed for added, removed in changes)  # ... and appends


@pytest.mark.slow
def test_benchmark_suite_runs_end_to_end(tmp_path):
    """About 10^4 results: the scripts run, the warehouse they build is sound and complete."""
    out = tmp_path / "BENCHMARK-OUTPUT.md"
    out.write_text("# Performance\n\n## View latency on the real history\n\nkept as is\n")
    results = run.main(
        [
            "--sizes",
            "1e4",
            "--incremental",
            "2",
            "--repeats",
            "1",
            "--rows-per-revision",
            "1000",
            "--work",
            str(tmp_path / "work"),
            "--out",
            str(out),
            "--keep",
        ]
    )
    full = results["full"][0]
    build = full["runs"][0]["build"]
    assert build["ok"], build["error"]
    assert full["runs"][0]["raw"]["ok"] and full["runs"][0]["raw"]["rows"] == full["mirror"]["rows"]
    assert build["peak_rss"] > 0 and build["startup"] > 0 and build["steps"]
    assert {s["step"] for s in build["steps"]} >= {"upstream_snapshots", "lake_tables"}
    assert build["published"] and build["results"] == full["mirror"]["results"] and build["lake_bytes"] > 0
    assert all(h["runs"] and all(r["ok"] for r in h["runs"]) for h in results["incremental"])
    quiet = [r for h in results["incremental"] for r in h["no_change"] if not r["warm_up"]]
    assert quiet and all(r["content_requests"] == 0 and r["parquet_written"] == 0 for r in quiet)
    queries = results["views"]
    assert queries["ok"] and queries["picks"]["gpu"] and queries["picks"]["kernel"]
    assert set(queries["examples"]) == set(views.EXAMPLES)
    assert queries["whole"]["fact_result"]["rows"] == queries["results"] == full["mirror"]["results"]
    assert {"regressions", "speedups", "run_history", "change_points"} <= set(queries["whole"])
    text = out.read_text()
    assert "kept as is" in text and "### Targets" in text and run.BEGIN in text
    assert "## Queries at" in text and "every view whole <= 3x fact_result whole" in text

    mirror = next((tmp_path / "work" / "mirrors").glob(f"r{full['revisions']}-*"))
    root = Path(full["warehouse"])
    expected = recount(mirror)
    with open_views(root / CATALOG_FILE) as con:
        assert [o for o in checks.all_checks(con) if not o.passed] == []
        per_source = dict(con.execute("select source_key, count(*) from fact_result group by 1").fetchall())
    assert per_source == dict(expected.per_source)
    assert sum(per_source.values()) == full["mirror"]["results"] == len(expected.results)
    assert Counter(per_source).total() > 5000


def test_the_page_the_scripts_write_holds_each_of_their_blocks_once():
    """``--write`` and ``--out docs/BENCHMARK-OUTPUT.md`` replace a block between its markers and
    append one when the markers are missing: every script's block is on that page, once, so a run
    replaces it (docs/PERFORMANCE.md, the reference page, holds none)."""
    page = startup.OUTPUT
    assert page == view_latency.OUTPUT and page.name == "BENCHMARK-OUTPUT.md"
    recorded = views._command(argparse.Namespace(repeats=3, examples_only=False, memory_limit=None, out=page, note=""))
    assert f"--out docs/{page.name}" in recorded
    text = page.read_text()
    reference = (page.parent / "PERFORMANCE.md").read_text()
    for name in (run.SECTION, views.SECTION, startup.SECTION, view_latency.SECTION):
        begin, end = markers(name)
        assert text.count(begin) == 1 and text.count(end) == 1 and text.index(begin) < text.index(end), name
        assert begin not in reference and end not in reference, name


def test_parquet_written_is_counted_per_table_above_its_partition_folders(tmp_path):
    lake = tmp_path / "lake" / "main"
    parts = {
        "dim_build/a.parquet": 3,
        "fact_build_point/build=0.1.0/b.parquet": 5,
        "fact_build_point/build=0.2.0/c.parquet": 7,
    }
    for name, size in parts.items():
        (lake / name).parent.mkdir(parents=True, exist_ok=True)
        (lake / name).write_bytes(b"x" * size)
    before = scenarios.parquet_files(tmp_path)
    (lake / "fact_build_point" / "build=0.2.0" / "d.parquet").write_bytes(b"y" * 11)
    assert scenarios.written_by_table({}, before) == {"dim_build": 3, "fact_build_point": 12}
    assert scenarios.written_by_table(before, scenarios.parquet_files(tmp_path)) == {"fact_build_point": 11}


def test_a_built_lake_is_read_as_any_client_reads_it(small_mirror, tmp_path):
    """What the scenarios read of a warehouse (rows, snapshot, summary, bytes) and what
    ``derived_cost`` measures, on a lake built by the publishing step itself."""
    from benchmarks import derived_cost, profile_build, query_profile

    root = tmp_path / "warehouse"
    assert scenarios.lake_state(root) == {"results": 0, "members": 0, "snapshot": None, "summary": {}, "lake_bytes": 0}
    listing, contents = profile_build.upstream_snapshots(root, small_mirror)
    phases = profile_build.PublishPhases()
    with progress.listening(phases):
        published = profile_build.lake_tables(root, listing, contents)
    assert [p["phase"] for p in phases.phases] == list(PHASES)  # each once, in order
    assert all(p["seconds"] >= 0 and p["peak_rss"] > 0 for p in phases.phases)
    state = scenarios.lake_state(root)
    expected = recount(small_mirror)
    assert state["results"] == len(expected.results) == published.summary["results_added"]
    assert state["snapshot"] == published.snapshot and state["summary"]["results_added"] == state["results"]
    files = scenarios.parquet_files(root)
    assert state["lake_bytes"] >= sum(size for size, _ in files.values()) > 0
    assert "fact_result" in scenarios.written_by_table({}, files)
    stored, *tables = derived_cost.measure(root)
    assert stored["table"] == "(stored tables)" and "error" not in stored
    with open_views(root / CATALOG_FILE) as con:
        held = {name for (name,) in con.execute("select table_name from duckdb_tables()").fetchall()}
        rows = {t["table"]: con.execute(f"select count(*) from {t['table']}").fetchone()[0] for t in tables}
    assert {t["table"] for t in tables} <= held and all(t["rows"] == rows[t["table"]] for t in tables)
    assert all(t["bytes"] > 0 for t in tables if t["rows"])
    assert scenarios.parquet_files(root) == files  # rolled back: the lake is as it was
    assert scenarios.lake_state(root)["snapshot"] == published.snapshot

    query = "select * from results"
    (profiled,) = query_profile.measure([root], query, runs=1, threads=1)
    assert profiled["rows"] == len(expected.results) and profiled["sql_version"]
    assert profiled["cpu_time"] > 0 and profiled["total_memory_allocated"] > 0
    assert profiled["slowest_operators"] and scenarios.parquet_files(root) == files  # read only
