"""Upstream history rewritten: a force-push drops the newest commit of a path, and
``commits.txt`` loses a run. What the warehouse ingested stays; it is flagged as no longer
upstream (``dim_upstream_revision.is_upstream``), ``fact_result.is_current`` is recomputed
from what upstream still lists, and nothing is deleted. When the history comes back, so do
the flags.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import refresh
from tests.plain_duckdb import open_views
from tests.reliability.conftest import copy_warehouse
from tests.reliability.published import assert_current_is_whole, assert_still_there, contents, published
from tests.reliability.upstreams import DATA, commits, copy_mirror, runs, set_commits, set_runs

DROPPED_RUN = "c1bdc24"


def _q(root: Path, sql: str, *params) -> list[tuple]:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute(sql, list(params)).fetchall()


def test_force_push_flags_results_and_deletes_nothing(after_warehouse, after_mirror, clean_after, tmp_path):
    root = copy_warehouse(after_warehouse, tmp_path / "warehouse")
    before = published(root)
    mirror = copy_mirror(after_mirror, tmp_path / "mirror")
    history = commits(mirror, DATA)
    dropped, new_head = history[0]["sha"], history[1]["sha"]
    set_commits(mirror, DATA, history[1:])
    set_runs(mirror, [r for r in runs(mirror) if r != DROPPED_RUN])

    done = refresh(root, upstream=str(mirror))

    assert done.result.success
    assert_still_there(root, before)  # every byte and every result of before is still there
    assert_current_is_whole(root)
    gone = _q(root, "select commit from dim_upstream_revision where not is_upstream order by 1")
    assert gone == sorted([(dropped,), (DROPPED_RUN,)])
    heads = _q(
        root, "select commit from dim_upstream_revision where is_head and path = ?", f"benchmark/data/{DATA}.csv"
    )
    assert heads == [(new_head,)]
    # Current = in the newest revision upstream still lists; a dropped run has none current.
    current = """
        select count(*) filter (where f.is_current),
               count(*) filter (where f.is_current and m.result_digest is null)
        from fact_result f
        left join (
            select m.result_digest from fact_revision_member m
            join dim_upstream_revision r using (revision_digest) where r.commit = ?
        ) m using (result_digest)
        where f.source_key = ?
    """
    ((n_current, current_elsewhere),) = _q(root, current, new_head, f"benchmark/data/{DATA}.csv")
    assert n_current > 0 and current_elsewhere == 0
    assert _q(root, "select count(*) from fact_result where source_key = ? and is_current", DROPPED_RUN) == [(0,)]
    assert _q(root, "select count(*) from fact_result") == [(len(before.results),)]  # none added or removed

    # The history comes back: the same warehouse as before the force-push.
    done = refresh(root, upstream=str(after_mirror))
    assert done.result.success
    assert contents(root) == clean_after
