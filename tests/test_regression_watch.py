"""The no_new_regressions check tells new rows of `regressions` apart by what the refresh changed
(regression_watch.new_in_refresh): it must report exactly the rows that comparing the whole
previous view reports (regression_watch.new_since)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines import regression_watch
from pipelines.store.generations import GenerationStore
from pipelines.store.storage import Storage
from tests.conftest import Refreshed, refresh
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror
from tests.test_refresh_metadata import _add_slower_release
from tests.tiny_mirror import row, write_mirror

FULL = "against the whole previous regressions view"


def _refresh_keeping_the_database(root: Path, mirror: Path, kept: Path) -> Refreshed:
    """A refresh; the database it replaces is copied to ``kept`` first."""
    shutil.copyfile(root / "liger.duckdb", kept)
    done = refresh(root, upstream=str(mirror))
    assert done.result.success
    return done


def _both_ways(root: Path, before: Path) -> tuple[regression_watch.Regressions, regression_watch.Regressions]:
    storage = Storage(str(root))
    after = regression_watch.read(storage, root / "liger.duckdb")
    full = regression_watch.new_since(regression_watch.read(storage, before), after)
    fast = regression_watch.new_in_refresh(GenerationStore(storage), before, after, root / "liger.duckdb")
    return full, fast


def _check(result) -> dict:
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "no_new_regressions"]
    return {k: v.value for k, v in check.metadata.items()}


@pytest.mark.slow
def test_one_added_commit_of_the_real_mirror(tmp_path: Path):
    mirror = small_mirror(tmp_path / "mirror")
    root = tmp_path / "warehouse"
    assert refresh(root, upstream=str(mirror)).result.success
    _add_slower_release(mirror)
    second = _refresh_keeping_the_database(root, mirror, tmp_path / "before.duckdb")
    full, fast = _both_ways(root, tmp_path / "before.duckdb")
    assert full.rows and fast.rows == full.rows and fast.columns == full.columns
    assert fast.compared.startswith("by the 1 revisions ingested"), fast.compared
    metadata = _check(second.result)
    assert metadata["new_regressions"] == len(full.rows)
    assert metadata["compared"] == fast.compared


def _tiny(commits: list[list[list[str]]], runs: dict[str, list[list[str]]], target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    return write_mirror(target, commits, runs)


def test_results_that_change_without_a_new_revision_are_compared(tmp_path: Path):
    """A later commit drops a row (it stops being current) and re-measures another with the same
    timestamp, and upstream stops listing a gh-pages run: version points of series without a
    new revision may change, so those series are compared with the previous view."""
    c1 = [row("liger", 1.00, "0.9.0", "2026-01-01 01:00:00"), row("torch", 2.0, "0.9.0", "2026-01-01 01:00:00")]
    c2 = [row("liger", 1.10, "0.9.2", "2026-01-02 01:00:00"), row("torch", 2.5, "0.9.2", "2026-01-02 01:00:00"),
          row("liger", 1.00, "0.9.0", "2026-01-01 01:00:00", kernel="swiglu")]  # fmt: skip
    runs = {
        "abc1234-v0.9.10": [row("liger", 1.30, "0.9.10", "2026-02-01 01:00:00"),
                            row("liger", 1.00, "0.9.10", "2026-02-01 01:00:00", kernel="swiglu")],
        "abc1235": [row("liger", 1.50, "0.9.11", "2026-02-02 01:00:00")],
    }  # fmt: skip
    root = tmp_path / "warehouse"
    assert refresh(root, upstream=str(_tiny([c1, c2], runs, tmp_path / "m1"))).result.success
    # c3: the torch 0.9.2 row is gone, liger 0.9.2 is re-measured (same timestamp, slower);
    # the run abc1235 is no longer listed.
    c3 = [row("liger", 1.40, "0.9.2", "2026-01-02 01:00:00"),
          row("liger", 1.00, "0.9.0", "2026-01-01 01:00:00", kernel="swiglu")]  # fmt: skip
    del runs["abc1235"]
    mirror = _tiny([c1, c2, c3], runs, tmp_path / "m2")
    _refresh_keeping_the_database(root, mirror, tmp_path / "before.duckdb")
    full, fast = _both_ways(root, tmp_path / "before.duckdb")
    assert full.rows and fast.rows == full.rows and fast.columns == full.columns
    assert "series whose results changed" in fast.compared, fast.compared

    # A previous database whose SQL differs: the shortcut does not apply, everything is compared.
    changed = tmp_path / "changed.duckdb"
    shutil.copyfile(tmp_path / "before.duckdb", changed)
    with duckdb.connect(str(changed)) as con:
        con.execute("create or replace macro regression_threshold() as 0.5")
    full, fast = _both_ways(root, changed)
    assert fast.compared == FULL and fast.rows == full.rows

    # No previous database: the first publish, nothing to compare with, nothing called new.
    storage = Storage(str(root))
    after = regression_watch.read(storage, root / "liger.duckdb")
    first = regression_watch.new_in_refresh(GenerationStore(storage), None, after, root / "liger.duckdb")
    assert not first.available and not first.rows
    assert first.note == f"first publish, nothing to compare with: the history holds {len(after.rows)} regressions"


def test_the_shortcut_guards_every_table_the_view_reads(tmp_path: Path):
    """new_in_refresh follows changes in fact_result, dim_upstream_revision, dim_version and
    regression_watch.DIMENSIONS: a regressions view that reads another table needs a new guard."""
    commits = [
        [row("liger", 1.00, "0.9.0", "2026-01-01 01:00:00")],
        [row("liger", 1.2, "0.9.2", "2026-01-02 01:00:00")],
    ]
    root = tmp_path / "warehouse"
    runs = {"abc1234": [row("liger", 1.3, "0.9.3", "2026-02-01 01:00:00")]}
    assert refresh(root, upstream=str(_tiny(commits, runs, tmp_path / "m"))).result.success
    with open_views(root / "liger.duckdb") as con:
        plan = "\n".join(r[1] for r in con.execute("explain analyze select * from regressions").fetchall())
    read = set(re.findall(r"/tables/([a-z_]+)/", plan))
    assert read == {"fact_result", "dim_upstream_revision", "dim_version", *regression_watch.DIMENSIONS}
