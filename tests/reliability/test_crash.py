"""Crash at every stage: SIGKILL a real ``liger-warehouse refresh`` at named failpoints.

Each kill runs the installed CLI in a subprocess against a copy of the base warehouse, with
``AFTER`` served by a fake GitHub, so the refresh has work at every stage (listing, downloads,
raw snapshots, normalization, the publishing transaction, its checks, its commit). After each
kill: the process died of SIGKILL; the lake's newest snapshot is the one before and every table
and view answers as it did; it passes the integrity checks; the raw store holds no partial
snapshot. Then the next refresh succeeds and publishes exactly what a refresh that was never
killed publishes.

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
    assert_raw_store_sound,
    assert_unchanged,
    cli_env,
    cli_refresh,
    contents,
    dagster_home,
    published,
)

pytestmark = pytest.mark.slow

# failpoint -> where the refresh is when it dies (docs/RELIABILITY.md lists the same).
POINTS = {
    "storage-replace:state": "listing: first ETag cache entry written to a temp file, not renamed",
    "downloading:7": "download: a CSV body half received, an earlier CSV already stored",
    "fetched:2": "download: second CSV fully received, its raw snapshot not yet written",
    "storage-replace:raw:4": "raw store: second snapshot in place, its index entry not renamed",
    "normalized": "transaction: first new revision normalized, its rows inserted, uncommitted",
    "staging": "transaction: every new revision ingested, nothing committed",
    "audit": "transaction: change points and derived tables made, the blocking checks about to run",
    "publish": "transaction: every check passed, the commit message set, the commit not made",
}


@dataclass
class Killed:
    """What one kill left behind, and what the refresh after it made of that."""

    proc: CompletedProcess
    problems: dict[str, str | None]  # check -> None when it passed, else why it failed
    stored: int  # raw snapshots indexed after the kill
    recovery: CompletedProcess
    recovered: dict


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
    problems = {
        "the lake answers as before": _problem(lambda: assert_unchanged(root, before)),
        "the lake is whole and passes the checks": _problem(lambda: assert_current_is_whole(root)),
        "the raw store is sound": _problem(lambda: assert_raw_store_sound(root)),
    }
    stored = len(Storage(str(root)).list("raw/index"))
    # The next refresh is the operator's: the same CLI and Dagster instance as the dead one.
    recovery = cli_refresh(root, env)
    return Killed(proc, problems, stored, recovery, contents(root))


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


def test_every_stage_has_a_point():
    assert len(set(POINTS)) >= 8


@pytest.mark.parametrize("point", POINTS)
def test_killed_refresh_loses_nothing_and_recovers(point, killed, clean_after, base_warehouse):
    k = killed[point]
    assert k.proc.returncode == -signal.SIGKILL, f"not killed at {point}: {k.proc.stderr[-3000:]}"
    assert k.problems == dict.fromkeys(k.problems)
    if point.startswith("downloading"):  # mid-way: some new snapshots stored, not all five
        base = len(Storage(str(base_warehouse)).list("raw/index"))
        assert base < k.stored < base + 5

    assert k.recovery.returncode == 0, k.recovery.stderr[-3000:]
    assert k.recovered == clean_after
