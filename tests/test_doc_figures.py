"""The latency and test-suite figures docs/PERFORMANCE.md and docs/VERDICTS.md quote are those of
the results files they cite (benchmarks/results/), not figures typed apart from them."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PERFORMANCE = (ROOT / "docs" / "PERFORMANCE.md").read_text()
VERDICTS = (ROOT / "docs" / "VERDICTS.md").read_text()


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _flat(text: str) -> str:
    return " ".join(text.split())


def _medians(run: dict) -> dict[str, float]:
    return {query: figure["median_s"] for query, figure in run["figures"].items()}


def test_the_query_figures_at_1e6_are_the_results_files():
    runs = _load("2026-12-07-queries-1e6.json")["runs"]
    before, latest = _medians(runs[0]), _medians(runs[-1])
    view, compare = "regressions view, one kernel and GPU", "compare_runs(base_run, head_run)"
    text = _flat(PERFORMANCE)
    assert f"kernel and GPU {latest[view]:.2f} s ({before[view]:.2f} s before its comparison was read once)" in text
    assert f"pair (met there); {latest[compare]:.2f} s at 10^6 results" in text
    assert f"`compare_runs` warm ≤ 0.3 s: {latest[compare]:.2f} s at 10^6" in text
    assert f"`compare_runs` of two runs {latest[compare]:.2f} s" in text
    assert f"`compare_versions` {latest['compare_versions(base, head), one GPU']:.2f} s" in text
    assert f"takes {latest[view]:.2f} s at 10^6" in text


def test_the_real_history_latency_is_the_results_files():
    warm = _load("2026-12-07-real-history.json")["latency"]["compare_runs"]["warm_ms"]
    refreshes = _load("2026-12-07-compare-runs-refreshes.json")["runs"][0]["figures"]
    text = _flat(VERDICTS)
    assert f"newest pair answered in {warm:.0f} ms warm" in text
    assert f"| {warm:.0f} ms (2026-12-07" in text
    two, maintained = refreshes["two_refreshes_warm_ms"]["median"], refreshes["after_maintenance_warm_ms"]["median"]
    assert f"two refreshes answers in {two} ms, and in {maintained} ms" in text
    assert f"{warm / 1000:.2f}-{two / 1000:.2f} s on the real history's newest pair" in _flat(PERFORMANCE)
    assert f"{warm / 1000:.2f} s on the lake a refresh publishes" in _flat(PERFORMANCE)


def test_the_suite_figures_are_the_results_file():
    run = _load("2026-12-07-test-suite.json")
    cpu = run["cpu_user_s"] + run["cpu_system_s"]
    text = _flat(PERFORMANCE)
    assert run["exit_code"] == 0
    assert f"suite alone takes {run['wall_s'] / 60:.1f} min" in text
    assert f"{run['passed']} tests in {run['wall_s']:.0f} s on 3 xdist workers" in text
    assert f"({cpu:,.0f} CPU-seconds on 2 cores)" in text
    assert f"the suite alone {run['wall_s'] / 60:.1f} min ({run['wall_s']:.0f} s)" in text


def test_the_start_up_figures_are_the_results_file():
    figures = _load("2026-12-07-startup.json")["runs"][-1]["figures"]
    median = {name: figure["median"] for name, figure in figures.items()}
    full, newest = median["full build"], median["refresh finding the newest revisions"]
    sql, help_ = median['`sql "select 1"`'], median["`--help`"]
    ratio = f"{newest / full:.2f}\N{MULTIPLICATION SIGN}"
    text = _flat(PERFORMANCE)
    assert f"{ratio}: {newest:.2f} s against {full:.2f} s" in text
    assert f"a full build: {ratio}.** {newest:.2f} s against {full:.2f} s" in text
    assert f'`sql "select 1"` {sql:.2f} s, `--help` {help_:.2f} s' in text
    for name, figure in figures.items():
        shown = name.replace("the newest revisions", "the 7 newest revisions")
        low, high = figure["range"]
        assert f"| {shown} | {figure['median']:.2f} s ({low:.2f}-{high:.2f})" in text, name


def _full_build(name: str) -> tuple[float, float, float]:
    """The job's seconds, DuckDB's COPY seconds and the job's peak RSS (GiB) of a 10^6 build."""
    (run,) = _load(name)["full"][0]["runs"]
    return run["build"]["job"], run["raw"]["seconds"], run["build"]["peak_rss"] / 2**30


def test_the_full_build_and_derived_table_figures_are_the_results_files():
    text = _flat(PERFORMANCE)
    job, copy, rss = _full_build("2026-12-07-10df47a-full-build-1e6.json")
    before_job, before_copy, before_rss = _full_build("2026-12-07-987692e-full-build-1e6.json")
    assert f"| {copy / job:.2f}\N{MULTIPLICATION SIGN}: job {job:.1f} s against `COPY` {copy:.1f} s" in text
    before = f"{before_copy / before_job:.2f}\N{MULTIPLICATION SIGN} at `987692e`"
    assert f"({before}: {before_job:.1f} s against {before_copy:.1f} s)" in text
    assert f"Peak RSS of the process tree {rss:.2f} GiB, in `lake_tables` ({before_rss:.2f} GiB at" in text
    derived = _load("2026-12-07-derived-cost-1e6-temp.json")
    (stored,) = [t for t in derived["tables"] if t["table"] == "(stored tables)"]
    tables = [t for t in derived["tables"] if t is not stored]
    assert f"{derived['seconds']:.1f} s and {derived['bytes'] / 1e6:.0f} MB in all" in text
    assert f"The derived tables cost {derived['seconds']:.1f} s (the table above)" in text
    assert f"| the stored tables they read, copied first | {stored['seconds']:.1f} |" in text
    seconds = {t["table"]: t["seconds"] + t["copy_seconds"] for t in tables}
    steps = seconds["fact_run_step"] + seconds["fact_build_step"]
    assert f"The two step tables are {steps / derived['seconds']:.0%} of the derived time" in text
    largest = ("fact_run_point", "fact_build_step", "fact_run_step", "fact_speedup_pair")
    held = sum(t["bytes"] for t in tables if t["table"] in largest)
    assert f"`fact_speedup_pair`, {held / 1e6:.0f} MB" in text
    # Target 1's arithmetic: the job allowed at 0.2x, and the ratio without those tables.
    assert f"the job may take {copy / 0.2:.0f} s against the {copy:.1f} s" in text
    assert f"it took {job:.1f} s, so {job - copy / 0.2:.0f} s must go" in text
    others = derived["seconds"] - steps
    assert f"take {steps:.1f} s (to {copy / (job - steps):.2f}\N{MULTIPLICATION SIGN})" in text
    assert f"{others:.1f} s more (to {copy / (job - derived['seconds']):.2f}\N{MULTIPLICATION SIGN})" in text
    for table in tables:
        if seconds[table["table"]] >= 1:
            timed = f"{table['seconds']:.1f} | {table['copy_seconds']:.1f}"
            row = f"| `{table['table']}` | {timed} | {table['rows']:,} | {table['bytes'] / 1e6:.1f} |"
            assert row in text, table["table"]


def test_the_ci_figures_are_the_results_file():
    latest = _load("2026-12-08-ci-runs.json")["runs"][-1]
    ci, suite = latest["figures"]["ci_s"], latest["figures"]["suite_s"]
    text = _flat(PERFORMANCE)
    assert f"| {ci / 60:.1f} min ({ci:.0f} s) on a clean clone, the suite {suite:.0f} s of it;" in text
    minutes = f"{ci / 60:.1f} min on a clean clone** (`{latest['commit']}`"
    assert f"{minutes}: {ci:.0f} s, the suite {suite:.0f} s of it;" in text
    assert f"the set-up, with uv, {ci - suite:.0f} s where" in text
    assert f"**missed** by {ci / 720:.2f}\N{MULTIPLICATION SIGN}" in text


def _one_run(name: str) -> tuple[dict, dict, dict]:
    """The 1,000-revision history's first build, and one new run at 10 and at 1,000 revisions."""
    small, large = _load(name)["incremental"]
    (one_small,), (one_large,) = small["runs"], large["runs"]
    return large, one_small, one_large


def test_the_figures_at_1000_revisions_are_the_results_files():
    text = _flat(PERFORMANCE)
    large, one_small, one_large = _one_run("2026-12-07-10df47a-incremental-1000.json")
    _, small_10gb, large_10gb = _one_run("2026-12-07-10df47a-incremental-1000-10gb.json")
    _, small_before, large_before = _one_run("2026-12-07-benchmarks-run-incremental-1000-10gb.json")
    ratio = one_large["job"] / one_small["job"]
    times = f"{one_large['job']:.1f} s against {one_small['job']:.1f} s"
    assert f"| {ratio:.2f}\N{MULTIPLICATION SIGN}: {times} at the default 1 GB memory limit;" in text
    assert f"**missed** by {ratio / 1.5:.1f}\N{MULTIPLICATION SIGN}" in text
    before = large_before["job"] / small_before["job"]
    times = f"{large_before['job']:.1f} s against {small_before['job']:.1f} s"
    assert f"it was {before:.2f}\N{MULTIPLICATION SIGN} before `10df47a` ({times})" in text
    ratio_10gb = large_10gb["job"] / small_10gb["job"]
    assert f"it takes {large_10gb['job']:.1f} s ({ratio_10gb:.2f}\N{MULTIPLICATION SIGN})" in text
    written = one_large["parquet_written_by_table"]
    assert f"writes {one_large['parquet_written'] / 2**20:.0f} MiB for {written['fact_result'] / 2**20:.1f} MiB" in text
    peaks = f"{one_large['peak_rss'] / 2**30:.2f} GiB at 1 GB, {large_10gb['peak_rss'] / 2**30:.2f} GiB at 10 GB"
    assert f"step peaks at {peaks}" in text
    setup = large["setup"]
    assert large["mirror"]["results"] == 2_643_527 and setup["ok"]
    peak = f"{setup['peak_rss'] / 2**30:.2f} GiB**"
    assert f"peaks at {peak} at the default memory limit, 1 GB, in {setup['job']:.1f} s" in text
    phases = _load("2026-12-07-publish-phases-2.6m.json")["phases"]
    for phase in phases[:3]:
        assert f"{phase['peak_rss'] / 2**30:.2f} GiB" in text and f"({phase['seconds']:.1f} s)" in text, phase
    assert f"Peak RSS at 10^7 ≤ 3 GiB: a first build of {large['mirror']['results'] / 1e6:.1f} million results" in text
    failed = {t["table"] for t in _load("2026-12-07-derived-cost-2.6m-1gb.json")["tables"] if "error" in t}
    assert failed == {"fact_speedup_pair"}
    temp = _load("2026-12-07-derived-cost-2.6m-1gb-temp.json")
    every = {t["table"] for t in _load("2026-12-07-derived-cost-1e6-temp.json")["tables"]}
    assert temp["ok"] and {t["table"] for t in temp["tables"]} == every


def test_the_publish_phases_at_1e6_are_the_results_file():
    phases = _load("2026-12-07-publish-phases-1e6.json")["phases"]
    total = sum(p["seconds"] for p in phases)
    text = _flat(PERFORMANCE)
    for p in phases:
        row = f"| {p['phase']} | {p['seconds']:.1f} | {p['seconds'] / total:.0%} | {p['peak_rss'] / 2**30:.2f} |"
        assert row in text, p["phase"]
    assert f"ingest and the change points cost {phases[0]['seconds']:.1f} s and {phases[1]['seconds']:.1f} s" in text


def test_the_compare_runs_profiles_are_the_results_files():
    before, after = _load("2026-12-08-compare-runs-profile-1e6.json")["warehouses"]
    history_before, history_after = _load("2026-12-08-compare-runs-profile-real-history.json")["warehouses"]
    text = _flat(PERFORMANCE)
    assert f"at 10^6: {after['warm_s']:.3f} s warm against {before['warm_s']:.3f} s" in text
    assert f"operators' CPU {after['cpu_time']:.3f} s against {before['cpu_time']:.3f} s" in text
    mib = [w["total_memory_allocated"] / 2**20 for w in (after, before)]
    assert f"{mib[0]:.0f} MiB allocated against {mib[1]:.0f} MiB" in text
    assert f"real history: {history_after['warm_s']:.3f} s against {history_before['warm_s']:.3f} s" in text
    old = {before["sql_version"], history_before["sql_version"]}
    new = {after["sql_version"], history_after["sql_version"]}
    assert len(old) == len(new) == 1 and old != new  # each side one SQL, the two sides not the same
    assert before["rows"] == after["rows"] and history_before["rows"] == history_after["rows"]
