"""The no_new_regressions check judges what a refresh brought in: the steps of `regressions`
into a build the refresh created or changed, never the history it already held."""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import pytest

from liger_warehouse.audit import regression_watch
from liger_warehouse.lake.connect import latest_snapshot, read_lake
from liger_warehouse.lake.location import Lake
from tests.conftest import refresh
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror
from tests.test_refresh_metadata import _add_slower_release


def _check(result) -> dict:
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "no_new_regressions"]
    return {"passed": check.passed, **{k: v.value for k, v in check.metadata.items()}}


def _regressions_into(root: Path, builds: list[str]) -> list[str]:
    with open_views(root / "catalog.sqlite") as con:
        rows = con.execute(
            "select series_digest from regressions where verdict = 'regression' and list_contains(?, head_version)",
            [builds],
        ).fetchall()
    return sorted(s for (s,) in rows)


def _add_slower_nightly(mirror: Path, run: str, factor: float) -> str:
    """A new gh-pages run: the newest run again, with the first Liger speed row ``factor`` times
    slower. Returns the series' kernel, provider and x value as the CSV has them."""
    runs = mirror / "gh-pages" / "benchmarks"
    newest = (runs / "commits.txt").read_text().split()[-1]
    text = gzip.decompress((runs / newest / "benchmark.csv.gz").read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    at = next(i for i, r in enumerate(body) if r[1] == "liger" and r[3] == "speed")
    for column in ("y_value_50", "y_value_20", "y_value_80"):
        i = header.index(column)
        body[at][i] = repr(float(body[at][i]) * factor)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    (runs / run).mkdir()
    (runs / run / "benchmark.csv.gz").write_bytes(gzip.compress(out.getvalue().encode()))
    with (runs / "commits.txt").open("a") as listing:
        listing.write(run + "\n")
    return body[at][0]


def _builds_changed_by_the_last_publish(lake: Lake) -> list[str]:
    """``dim_build`` at the newest snapshot against the one before it, read by time travel."""
    snapshot = latest_snapshot(lake)
    builds = []
    for as_of in (snapshot - 1, snapshot):
        with read_lake(lake, as_of=str(as_of)) as con:
            builds.append(con.execute(regression_watch.BUILDS).fetchall())
    return regression_watch.changed_builds(*builds)


@pytest.mark.slow
def test_the_first_publish_is_the_baseline_and_a_new_release_is_judged(tmp_path: Path):
    mirror = small_mirror(tmp_path / "mirror")
    root = tmp_path / "warehouse"
    first = refresh(root, upstream=str(mirror))
    assert first.result.success
    check = _check(first.result)
    assert check["passed"] and check["note"].startswith("first publish, nothing to compare with")

    _add_slower_release(mirror)  # one main-branch row at a new version 99.0.0, 100x slower
    second = refresh(root, upstream=str(mirror))
    check = _check(second.result)
    want = _regressions_into(root, ["99.0.0"])
    assert len(want) == 1 and not check["passed"]
    assert check["new_regressions"] == 1 and "99.0.0" in check["compared"]
    lake = Lake.of(str(root))
    new = regression_watch.new_in_snapshot(lake, latest_snapshot(lake))
    assert sorted(r[new.columns.index("series_digest")] for r in new.rows) == want


@pytest.mark.slow
def test_a_new_nightly_run_is_judged_against_the_build_before_it(tmp_path: Path):
    mirror = small_mirror(tmp_path / "mirror", runs=8)
    root = tmp_path / "warehouse"
    assert refresh(root, upstream=str(mirror)).result.success
    kernel = _add_slower_nightly(mirror, "fedcba9", factor=3.0)
    second = refresh(root, upstream=str(mirror))
    (nightly,) = _builds_changed_by_the_last_publish(Lake.of(str(root)))
    assert nightly.endswith(".fedcba9")
    check = _check(second.result)
    found = _regressions_into(root, [nightly])
    assert check["new_regressions"] == len(found) >= 1
    with open_views(root / "catalog.sqlite") as con:
        kernels = con.execute(
            "select distinct kernel from regressions where head_version = ? and verdict = 'regression'", [nightly]
        ).fetchall()
    assert (kernel,) in kernels

    # Nothing new upstream: nothing is judged again.
    third = refresh(root, upstream=str(mirror))
    assert _check(third.result) == {"passed": True, "new_regressions": 0, "regressions": "_nothing new was published_",
                                    "note": "nothing new was published"}  # fmt: skip
