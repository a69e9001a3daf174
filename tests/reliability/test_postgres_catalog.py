"""Several writers, one lake: a PostgreSQL catalog and one data path shared by two hosts.

Each "host" is a process with a raw store of its own that refreshes the shared lake through
``publish()`` (``tests/reliability/direct.py``). Both read the lake, download what it lacks and
then enter their publishing transactions at the same moment. DuckLake commits one of them; the
other must commit nothing and say so in one line (``PublishConflict``), or commit after it with
nothing counted twice. Either way the lake must equal what one writer alone publishes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from tests.reliability.direct import refresh_lake
from tests.reliability.postgres import Postgres, postgres  # noqa: F401 - the fixture
from tests.reliability.published import (
    assert_current_is_whole,
    assert_still_there,
    assert_unchanged,
    contents,
    duplicates,
    published,
)

ROOT = Path(__file__).resolve().parents[2]


def _host(root: Path, mirror: Path, lake: Lake, **env: str) -> subprocess.Popen:
    """One host's refresh of ``lake`` in a process of its own."""
    args = [sys.executable, "-m", "tests.reliability.direct", str(root), str(mirror), lake.catalog, lake.data]
    return subprocess.Popen(
        args, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _missing(rows: list[str], of: list[str]) -> list[str]:
    """``of except all rows``: the rows of ``of`` (as a multiset) that ``rows`` lacks."""
    return sorted((Counter(of) - Counter(rows)).elements())


def _wait_for(paths: list[Path], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never reached: {paths}"
        time.sleep(0.05)


@pytest.fixture
def shared_lake(postgres: Postgres, before_mirror: Path, tmp_path: Path) -> Lake:  # noqa: F811
    """A lake on a fresh PostgreSQL database, published once from BEFORE by a first host."""
    lake = Lake.of(str(tmp_path / "host-a"), postgres.new_catalog(), str(tmp_path / "shared-data"))
    assert refresh_lake(str(tmp_path / "host-a"), str(before_mirror), lake).snapshot is not None
    return lake


def test_a_first_refresh_onto_an_empty_database_creates_the_lake(postgres, before_mirror, tmp_path):  # noqa: F811
    lake = Lake.of(str(tmp_path), postgres.new_catalog(), str(tmp_path / "data"))
    done = refresh_lake(str(tmp_path), str(before_mirror), lake)
    assert done.snapshot is not None and published(tmp_path, lake).results


@pytest.fixture(scope="module")
def one_writer(before_mirror: Path, after_mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What one writer alone publishes from BEFORE, then AFTER (a local SQLite catalog)."""
    root = tmp_path_factory.mktemp("one-writer") / "warehouse"
    lake = Lake.of(str(root))
    for mirror in (before_mirror, after_mirror):
        refresh_lake(str(root), str(mirror), lake)
    return contents(root, lake)


def test_two_hosts_refreshing_one_postgres_catalog_lose_and_duplicate_nothing(
    shared_lake, after_mirror, one_writer, tmp_path
):
    before = published(tmp_path, shared_lake)
    start = tmp_path / "start"
    hosts = [_host(tmp_path / f"host-{n}", after_mirror, shared_lake, LIGER_TEST_START=str(start)) for n in "bc"]
    _wait_for([Path(f"{start}.{p.pid}.ready") for p in hosts])
    start.touch()  # both have read the lake and downloaded what it lacks: publish together
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in hosts]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes in ([0, 0], [0, 1]), outcomes
    for code, out, _ in outcomes:
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        answer = json.loads(lines[0])
        if code == 1:  # the loser committed nothing and says so in one line
            assert answer["error"] == "PublishConflict", answer
            assert len(answer["message"].splitlines()) == 1
            assert "nothing was published" in answer["message"]

    assert_still_there(tmp_path, before, shared_lake)
    assert_current_is_whole(tmp_path, shared_lake)
    now = contents(tmp_path, shared_lake)
    for table in ("fact_result", "fact_revision_member"):
        assert duplicates(now[table]) == [], f"{table} holds a row twice"
        assert _missing(now[table], one_writer[table]) == [], f"{table} lacks rows one writer publishes"
        assert _missing(one_writer[table], now[table]) == [], f"{table} holds rows one writer does not publish"
    assert now == one_writer
    # The loser's next refresh finds nothing new: the lake stays as it is.
    after = published(tmp_path, shared_lake)
    assert refresh_lake(str(tmp_path / "host-c"), str(after_mirror), shared_lake).snapshot is None
    assert_unchanged(tmp_path, after, shared_lake)


def test_a_reader_of_a_postgres_catalog_sees_the_old_snapshot_until_the_commit(shared_lake, after_mirror, tmp_path):
    before = published(tmp_path, shared_lake)
    release = tmp_path / "release"
    host = _host(tmp_path / "host-b", after_mirror, shared_lake, LIGER_WAREHOUSE_PAUSE=f"publish={release}")
    try:
        _wait_for([Path(f"{release}.reached")])
        # Everything is written and checked, the commit not made: readers see the old snapshot.
        assert_unchanged(tmp_path, before, shared_lake)
    finally:
        release.touch()
    assert host.wait(timeout=300) == 0, host.communicate()
    now = published(tmp_path, shared_lake)
    assert now.snapshot > before.snapshot and before.results < now.results


def test_a_refresh_killed_before_its_commit_leaves_the_postgres_catalog_as_it_was(
    shared_lake, after_mirror, one_writer, tmp_path
):
    before = published(tmp_path, shared_lake)
    host = _host(tmp_path / "host-b", after_mirror, shared_lake, LIGER_WAREHOUSE_FAILPOINT="publish")
    assert host.wait(timeout=300) == -signal.SIGKILL, host.communicate()
    assert_unchanged(tmp_path, before, shared_lake)
    # The next refresh (the same host) publishes what one writer alone does.
    assert refresh_lake(str(tmp_path / "host-b"), str(after_mirror), shared_lake).snapshot is not None
    assert contents(tmp_path, shared_lake) == one_writer


def test_a_triage_write_during_a_refresh_is_kept_and_the_lake_stays_consistent(shared_lake, after_mirror, tmp_path):
    """A triage write commits while a refresh holds its transaction open: both touch
    ``series_triage``, so DuckLake lets one of them win. The mute must be there afterwards, and
    ``series_triage`` must agree with ``triage_event`` whichever committed first."""
    from liger_warehouse.triage import events

    release = tmp_path / "release"
    host = _host(tmp_path / "host-b", after_mirror, shared_lake, LIGER_WAREHOUSE_PAUSE=f"publish={release}")
    try:
        _wait_for([Path(f"{release}.reached")])

        def mute(con):
            return events.Event("mute", events.resolve_target(con, None, None, "rms_norm"), "oncall", "noisy")

        _, snapshot = events.record(shared_lake, mute)
    finally:
        release.touch()
    out, _ = host.communicate(timeout=300)
    said = json.loads(out.strip().splitlines()[-1])
    assert host.returncode == 0 or said["error"] == "PublishConflict", said
    if host.returncode != 0:  # the refresh lost: the next one publishes, with the mute standing
        assert refresh_lake(str(tmp_path / "host-b"), str(after_mirror), shared_lake).snapshot > snapshot
    with open_lake(shared_lake, read_only=True) as con:
        muted = con.execute(
            "select bool_and(t.muted), count(*) from series_triage as t join dim_series as s using (series_digest) "
            "where s.kernel = 'rms_norm'"
        ).fetchone()
        assert con.execute("select count(*) from triage_event where action = 'mute'").fetchone()[0] == 1
    assert muted[0] is True and muted[1] > 0, "series_triage agrees with the event log"
    assert_current_is_whole(tmp_path, shared_lake)
