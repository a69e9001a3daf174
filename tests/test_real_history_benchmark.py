"""``benchmarks/real_history.py`` on the committed fixture cut, so that it keeps working (issue 40):
its counts of one pair beside a second, plain recomputation in SQL. The full run is
``python -m benchmarks.real_history --json FILE`` (benchmarks/results/); no timing is asserted."""

from __future__ import annotations

import argparse
import json
from itertools import pairwise
from pathlib import Path

import pytest

from benchmarks import real_history
from benchmarks.real_history_data import file_stem
from liger_warehouse.lake.location import CATALOG_FILE
from tests.conftest import MIRROR
from tests.plain_duckdb import open_views

# Code changed for a few kernels (jsd, poly_norm, qwen2vl_mrope, tvd), not for the others, and
# the range has commit titles that read as performance work.
PAIR = ("3b79375", "4444fdf")
RULE = "compare_runs"

UNCHANGED_SQL = """
with changed as (
    select distinct kernel from kernel_files
    where stem in (select kernel_file_stem(f) from unnest($files::varchar[]) as t(f))
)
select count(*), count(*) filter (where c.verdict in ('regression', 'improvement'))
from compare_runs($base, $head) as c
join dim_series as s using (series_digest)
where s.is_liger and c.kernel not in (select kernel from changed)
"""

# The median of each series' five runs before the head, from the lake's run points this time
# (every unit of the fixture is lower-is-better).
OUTLIERS_SQL = """
with head as (
    select seq from dim_upstream_revision where source = 'gh-pages' and run = $head
),
before as (
    select p.series_digest, p.p50, row_number() over (partition by p.series_digest order by r.seq desc) as k
    from fact_run_point as p
    join dim_upstream_revision as r on r.source = 'gh-pages' and r.run = p.run
    where r.seq < (select seq from head)
),
typical as (
    select series_digest, median(p50) as p50 from before where k <= 5 group by series_digest
)
select c.verdict, count(*),
    count(*) filter (where case c.verdict when 'regression' then c.head_p50 <= t.p50 else c.head_p50 >= t.p50 end)
from compare_runs($base, $head) as c
join typical as t using (series_digest)
where c.verdict in ('regression', 'improvement')
group by c.verdict
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    work = tmp_path_factory.mktemp("real-history")
    out = work / "results.json"
    results = real_history.main(
        ["--json", str(out), "--mirror", str(MIRROR), "--work", str(work), "--latency-runs", "1"]
    )
    return results, work


def _pair(results: dict, base: str, head: str) -> dict:
    (record,) = [p for p in results["pairs"] if (p["base"], p["head"]) == (base, head)]
    return record


def test_the_json_is_what_main_measured(measured):
    results, work = measured
    assert json.loads((work / "results.json").read_text()) == results
    assert results["command"].startswith("python -m benchmarks.real_history --json ")
    assert len(results["repository"]["commit"]) == 40 and results["machine"]["cores"] and results["machine"]["duckdb"]
    runs = (MIRROR / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()
    assert [(p["base"], p["head"]) for p in results["pairs"]] == list(pairwise(runs))
    assert set(results["rules"]) == set(real_history.RULES) == set(results["latency"])
    assert all(t["rows"] > 0 and t["pair"] == f"{runs[-2]} → {runs[-1]}" for t in results["latency"].values())


def test_false_alarms_of_one_pair_match_a_recount_with_the_lakes_own_stems(measured):
    results, work = measured
    record = _pair(results, *PAIR)
    compare = json.loads((MIRROR / "compare" / f"{PAIR[0]}...{PAIR[1]}.json").read_text())
    files = [f["filename"] for f in compare["files"]]
    with open_views(work / "warehouse" / CATALOG_FILE) as con:
        stems = {s for (s,) in con.execute("select kernel_file_stem(unnest($f::varchar[]))", {"f": files}).fetchall()}
        series, flagged = con.execute(UNCHANGED_SQL, {"files": files, "base": PAIR[0], "head": PAIR[1]}).fetchone()
    assert set(record["changed_stems"]) == stems - {None}
    assert set(record["touched_kernels"]) >= {"jsd", "poly_norm", "tvd"}
    counted = record["rules"][RULE]["false_alarms"]
    assert (counted["series"], counted["flagged"]) == (series, flagged)
    assert series > 500 and flagged > 0


def test_outliers_of_the_newest_pair_match_a_recount_from_the_run_points(measured):
    results, work = measured
    newest = results["rules"][RULE]["outliers_newest_pair"]
    base, head = newest["pair"].split(" → ")
    with open_views(work / "warehouse" / CATALOG_FILE) as con:
        rows = {v: (n, within) for v, n, within in con.execute(OUTLIERS_SQL, {"base": base, "head": head}).fetchall()}
    assert (newest["regressions"], newest["regressions_within_median"]) == rows.get("regression", (0, 0))
    assert (newest["improvements"], newest["improvements_within_median"]) == rows.get("improvement", (0, 0))
    assert newest["without_history"] == 0


def test_identical_pairs_and_labelled_events(measured):
    results, _ = measured
    identical = _pair(results, "7644a0f-v0.7.0", "7644a0f")
    assert identical["status"] == "identical" and identical["touched_kernels"] == [] and identical["events"] == []
    summary = results["rules"][RULE]
    assert summary["identical_pairs"]["pairs"] == 1
    assert summary["identical_pairs"]["series"] == identical["rules"][RULE]["false_alarms"]["series"] > 0
    record = _pair(results, *PAIR)
    assert "[Refactor]: optimize poly_norm backward kernel pointer handling (#1018)" in record["performance_titles"]
    events = {e["kernel"]: e for e in record["events"]}
    assert events["poly_norm"]["named_in_title"] and not events["jsd"]["named_in_title"]
    assert "geglu" not in events  # its optimisation (#1031) is another backend's file, in a sub-folder
    labelled = [e for p in results["pairs"] for e in p.get("events", []) if e["rules"][RULE]["series"]]
    assert summary["labelled"]["events"] == len(labelled)
    assert summary["labelled"]["found"] == sum(e["rules"][RULE]["found"] for e in labelled)


@pytest.mark.parametrize(
    ("filename", "stem"),
    [
        ("benchmark/scripts/benchmark_softmax.py", "softmax"),
        ("src/liger_kernel/ops/layer_norm.py", "layer_norm"),
        ("src/liger_kernel/chunked_loss/jsd_loss.py", "jsd_loss"),
        ("src/liger_kernel/ops/backends/_ascend/ops/geglu.py", None),
        ("test/transformers/test_rms_norm.py", None),
        ("src/liger_kernel/ops/rms_norm.pyi", None),
    ],
)
def test_file_stem(filename, stem):
    assert file_stem(filename) == stem


def test_a_scratch_copy_at_the_rules_own_significance_measures_what_the_lake_does(measured, tmp_path):
    results, work = measured
    with open_views(work / "warehouse" / CATALOG_FILE) as con:
        (own,) = con.execute("select verdict_rule().significance::double").fetchone()
    args = argparse.Namespace(significance=own, mirror=MIRROR, latency_runs=1)
    scratch = real_history._measure(work / "warehouse" / CATALOG_FILE, tmp_path / "scratch", args)
    assert scratch["significance"] == own and not (tmp_path / "scratch").exists()
    assert scratch["rules"] == results["rules"]
    args.significance = 50.0
    stricter = real_history._measure(work / "warehouse" / CATALOG_FILE, tmp_path / "scratch", args)
    assert stricter["rules"][RULE]["pooled"]["flagged"] < results["rules"][RULE]["pooled"]["flagged"]
