"""Crash at every stage: SIGKILL a real ``liger-warehouse refresh`` at named failpoints.

Each kill runs the installed CLI in a subprocess against a copy of the base warehouse, with
``AFTER`` served by a fake GitHub, so the refresh has work at every stage (listing, downloads,
raw snapshots, normalization, Parquet parts, staging, audits, the switch, the views). After
each kill: the process died of SIGKILL; no lock is left held; the generation published before
is byte-identical (or, past the switch, it is the parent of a whole new one); every view of
liger.duckdb opens and queries; the raw store holds no partial snapshot. Then the next refresh
succeeds and publishes exactly what a refresh that was never killed publishes.

The kills and their recoveries run two at a time in one module fixture (each costs a Dagster
start-up); the parametrized test then reports on each point.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from liger_warehouse.store.storage import Storage
from tests.fake_github import FakeGitHub
from tests.reliability.conftest import copy_warehouse, github_env
from tests.reliability.published import (
    Published,
    assert_current_is_whole,
    assert_locks_free,
    assert_raw_store_sound,
    assert_still_there,
    cli_env,
    cli_refresh,
    contents,
    dagster_home,
    database_generation,
    gens_of,
    published,
    view_counts,
)

pytestmark = pytest.mark.slow

# failpoint -> where the refresh is when it dies (docs/RELIABILITY.md lists the same).
POINTS = {
    "storage-replace:state": "listing: first ETag cache entry written to a temp file, not renamed",
    "downloading:7": "download: a CSV body half received, an earlier CSV already stored",
    "fetched:2": "download: second CSV fully received, its raw snapshot not yet written",
    "storage-replace:raw:4": "raw store: second snapshot in place, its index entry not renamed",
    "normalized": "normalization: first new revision normalized, its member part written",
    "storage-replace:tables:6": "Parquet: sixth new part not renamed, five before it in place",
    "staging": "staging: every part written, the manifest not yet",
    "storage-replace:generations": "staging: the manifest written to a temp file, not renamed",
    "audit": "blocking checks: auditing the staged generation",
    "publish": "switch: holding the publish lock, the parent re-checked, CURRENT not yet written",
    "storage-replace:CURRENT": "switch: the new pointer written to a temp file, not renamed",
    "database-view": "views: switched; the new liger.duckdb built beside the old one, not yet in place",
}
# Killed after CURRENT moved: the new generation is published, the views still show the old.
PAST_THE_SWITCH = {"database-view"}


@dataclass
class Killed:
    """What one kill left behind, and what the refresh after it made of that."""

    proc: CompletedProcess
    problems: dict[str, str | None]  # check -> None when it passed, else why it failed
    current: tuple[str | None, str | None]  # (id, parent) of CURRENT after the kill
    shown: str  # the generation liger.duckdb showed after the kill
    stored: int  # raw snapshots indexed after the kill
    recovery: CompletedProcess
    recovered: dict
    shown_after: str
    current_after: str | None


def _problem(check: Callable[[], object]) -> str | None:
    try:
        check()
    except Exception as exc:  # the test reports it; the fixture must go on with other kills
        return f"{type(exc).__name__}: {exc}"
    return None


def _kill_and_recover(point: str, base: Path, before: Published, fake: FakeGitHub, tmp: Path) -> Killed:
    root = copy_warehouse(base, tmp / "warehouse")
    env = cli_env(dagster_home(tmp / "dagster"), **github_env(fake))
    proc = cli_refresh(root, {**env, "LIGER_WAREHOUSE_FAILPOINT": point})
    db = root / "liger.duckdb"
    problems = {
        "locks are free": _problem(lambda: assert_locks_free(root)),
        "what was published is still there": _problem(lambda: assert_still_there(root, before)),
        "CURRENT is whole and passes the audits": _problem(lambda: assert_current_is_whole(root)),
        "every view opens and queries": _problem(lambda: view_counts(db)),
        "the raw store is sound": _problem(lambda: assert_raw_store_sound(root)),
    }
    gen = gens_of(root).current()
    shown, stored = database_generation(db), len(Storage(root).list("raw/index"))
    # The next refresh is the operator's: the same CLI, lock and Dagster instance as the dead one.
    recovery = cli_refresh(root, env)
    return Killed(
        proc,
        problems,
        (gen.id or None, gen.parent),
        shown,
        stored,
        recovery,
        contents(root),
        database_generation(db),
        gens_of(root).current_id(),
    )


@pytest.fixture(scope="module")
def before(base_warehouse: Path) -> Published:
    return published(base_warehouse)


@pytest.fixture(scope="module")
def killed(
    base_warehouse: Path, before: Published, after_github: FakeGitHub, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Killed]:
    """Every kill and its recovery, two at a time (each costs two Dagster start-ups)."""

    def run(point: str) -> Killed:
        return _kill_and_recover(point, base_warehouse, before, after_github, tmp_path_factory.mktemp("killed"))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(POINTS, pool.map(run, POINTS), strict=True))


def test_at_least_ten_distinct_points():
    assert len(set(POINTS)) >= 10


@pytest.mark.parametrize("point", POINTS)
def test_killed_refresh_loses_nothing_and_recovers(point, killed, before, clean_after, base_warehouse):
    k = killed[point]
    assert k.proc.returncode == -signal.SIGKILL, f"not killed at {point}: {k.proc.stderr[-3000:]}"
    assert k.problems == dict.fromkeys(k.problems)
    current, parent = k.current
    if point in PAST_THE_SWITCH:
        assert current != before.current and parent == before.current
    else:
        assert current == before.current
    # The views still show the generation published before the kill.
    assert k.shown == before.current
    if point.startswith("downloading"):  # mid-way: some new snapshots stored, not all five
        base = len(Storage(base_warehouse).list("raw/index"))
        assert base < k.stored < base + 5

    assert k.recovery.returncode == 0, k.recovery.stderr[-3000:]
    assert k.recovered == clean_after
    assert k.shown_after == k.current_after
