"""Crash at every stage: SIGKILL a real ``liger-warehouse refresh`` at named failpoints.

Each kill runs the installed CLI in a subprocess against a copy of the base warehouse, with
``AFTER`` served by a fake GitHub, so the refresh has work at every stage (listing, downloads,
raw snapshots, normalization, Parquet parts, staging, audits, the switch, the views). After
each kill: the process died of SIGKILL; no lock is left held; the generation published before
is byte-identical (or, past the switch, it is the parent of a whole new one); every view of
liger.duckdb opens and queries; the raw store holds no partial snapshot. Then the next refresh
succeeds and publishes exactly what a refresh that was never killed publishes.

The kills run two at a time in one module fixture: each costs a Dagster start-up.
"""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.conftest import refresh
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

# failpoint -> where the refresh is when it dies (docs/RELIABILITY.md lists the same).
POINTS = {
    "storage-replace:state": "listing: first ETag cache entry written to a temp file, not renamed",
    "downloading:7": "download: a CSV body half received (two earlier CSVs already stored)",
    "fetched:2": "download: second CSV fully received, its raw snapshot not yet written",
    "storage-replace:raw": "raw store: first snapshot written to a temp file, not renamed",
    "storage-replace:raw:4": "raw store: second snapshot in place, its index entry not renamed",
    "normalized": "normalization: first new revision normalized, its member part written",
    "storage-replace:tables": "Parquet: first new part written to a temp file, not renamed",
    "storage-replace:tables:6": "Parquet: sixth new part not renamed, five before it in place",
    "staging": "staging: every part written, the manifest not yet",
    "storage-replace:generations": "staging: the manifest written to a temp file, not renamed",
    "audit": "blocking checks: auditing the staged generation",
    "publish": "switch: holding the publish lock, the parent re-checked, CURRENT not yet written",
    "storage-replace:CURRENT": "switch: the new pointer written to a temp file, not renamed",
    "database-view": "views: switched; the new liger.duckdb half built beside the old one",
    "database-replace": "views: switched; the new liger.duckdb built, not moved into place",
}
# Killed after CURRENT moved: the new generation is published, the views still show the old.
PAST_THE_SWITCH = {"database-view", "database-replace"}
# Recovered through the CLI too (the lock it takes, the Dagster instance the dead run left).
CLI_RECOVERY = {"storage-replace:CURRENT", "database-view"}


@dataclass
class Killed:
    root: Path
    home: Path
    env: dict[str, str]
    proc: CompletedProcess


@pytest.fixture(scope="module")
def before(base_warehouse: Path) -> Published:
    return published(base_warehouse)


@pytest.fixture(scope="module")
def killed(
    base_warehouse: Path, after_github: FakeGitHub, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Killed]:
    def kill(point: str) -> Killed:
        tmp = tmp_path_factory.mktemp("killed")
        root = copy_warehouse(base_warehouse, tmp / "warehouse")
        home = dagster_home(tmp / "dagster")
        env = cli_env(home, **github_env(after_github))
        proc = cli_refresh(root, {**env, "LIGER_WAREHOUSE_FAILPOINT": point})
        return Killed(root, home, env, proc)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(POINTS, pool.map(kill, POINTS), strict=True))


def test_at_least_ten_distinct_points():
    assert len(set(POINTS)) >= 10


@pytest.mark.parametrize("point", POINTS)
def test_killed_refresh_loses_nothing_and_recovers(point, killed, before, clean_after, after_github):
    k = killed[point]
    assert k.proc.returncode == -signal.SIGKILL, f"not killed at {point}: {k.proc.stderr[-3000:]}"

    assert_locks_free(k.root)
    assert_still_there(k.root, before)
    now = gens_of(k.root).current()
    if point in PAST_THE_SWITCH:
        assert now.id != before.current and now.parent == before.current
    else:
        assert now.id == before.current
    assert_current_is_whole(k.root)
    # The views open and query, and still show the generation published before the kill.
    assert view_counts(k.root / "liger.duckdb")
    assert database_generation(k.root / "liger.duckdb") == before.current
    assert_raw_store_sound(k.root)

    if point in CLI_RECOVERY:
        again = cli_refresh(k.root, k.env)
        assert again.returncode == 0, again.stderr[-3000:]
    else:
        assert refresh(k.root, after_github).result.success
    assert_locks_free(k.root)
    assert contents(k.root) == clean_after
    assert database_generation(k.root / "liger.duckdb") == gens_of(k.root).current_id()
    assert view_counts(k.root / "liger.duckdb")
