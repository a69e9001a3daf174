"""Concurrency on one lake with its local SQLite catalog: readers during a refresh, a reader
during a refresh held just before its commit, and two refreshes at once.

A refresh is one DuckLake transaction; it writes new data files and changes the catalog only
when it commits. Readers attach the catalog read-only and see the snapshot that was newest when
their transaction began; they never wait for each other, and on a SQLite catalog the commit waits
for the readers' open transactions while readers arriving meanwhile wait for the commit. Two writers of one
lake conflict at the commit: one commits, the other raises ``PublishConflict`` and commits
nothing. Two hosts on one PostgreSQL catalog: ``test_postgres_catalog.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.reliability.conftest import github_env
from tests.reliability.published import (
    assert_current_is_whole,
    assert_still_there,
    assert_unchanged,
    cli_env,
    cli_refresh,
    cli_script,
    contents,
    dagster_home,
    duplicates,
    published,
)

ROOT = Path(__file__).resolve().parents[2]


def _start_reader(catalog: Path, mode: str, stop: Path, out: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.reliability.reader", str(catalog), mode, str(stop), str(out)]
    return subprocess.Popen(args, cwd=ROOT)


def _wait_for(paths: list[Path], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never reached: {paths}"
        time.sleep(0.05)


def _peek(out: Path) -> list[int]:
    """The snapshots a reader has seen so far."""
    seen = Path(f"{out}.seen")
    return json.loads(seen.read_text()) if seen.exists() else []


def test_readers_query_every_table_and_view_during_a_refresh_without_an_error(base_copy, after_github, tmp_path):
    """The slow reader keeps a transaction open most of the time: the commit waits for it, and
    the readers arriving meanwhile wait for the commit, none longer than the lake lets them."""
    catalog, stop = base_copy / "catalog.sqlite", tmp_path / "stop"
    old = published(base_copy).snapshot
    outs = {mode: tmp_path / f"{mode}.json" for mode in ("fresh", "held", "slow")}
    readers = [_start_reader(catalog, mode, stop, out) for mode, out in outs.items()]
    try:
        _wait_for([Path(f"{out}.ready") for out in outs.values()])
        done = cli_refresh(base_copy, cli_env(dagster_home(tmp_path / "dagster"), **github_env(after_github)))
        assert done.returncode == 0, done.stderr[-3000:]
        new = published(base_copy).snapshot
        # Let every reader read the new snapshot before stopping.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(new in _peek(out) for out in outs.values()):
            time.sleep(0.2)
    finally:
        stop.touch()
        for reader in readers:
            reader.wait(timeout=60)
    for mode, out in outs.items():
        seen = json.loads(out.read_text())
        assert seen["errors"] == [], mode
        assert seen["rounds"] > 1, mode
        # Each round reads one snapshot whole: the old one until the commit, the new one after it.
        assert seen["snapshots"] == [old, new], mode


def test_a_reader_during_a_refresh_held_before_its_commit_answers_from_the_old_snapshot(
    base_copy, after_github, clean_after, tmp_path
):
    before = published(base_copy)
    release = tmp_path / "release"
    env = cli_env(
        dagster_home(tmp_path / "dagster"), **github_env(after_github), LIGER_WAREHOUSE_PAUSE=f"publish={release}"
    )
    refresh = subprocess.Popen(
        [*cli_script(), "refresh", "--warehouse", str(base_copy)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_for([Path(f"{release}.reached")], timeout=300)
        # Ingested, derived and checked, not committed: a reader opened now sees the old snapshot.
        assert_unchanged(base_copy, before)
    finally:
        release.touch()
    _, err = refresh.communicate(timeout=300)
    assert refresh.returncode == 0, err[-3000:]
    assert published(base_copy).snapshot > before.snapshot
    assert contents(base_copy) == clean_after


def _direct(root: Path, mirror: Path, start: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.reliability.direct", str(root), str(mirror)]
    env = {**os.environ, "LIGER_TEST_START": str(start)}
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_refreshes_of_one_lake_at_once_commit_one_and_lose_nothing(base_copy, after_mirror, clean_after, tmp_path):
    """Both read the lake and store what it lacks, then publish at the same moment."""
    before = published(base_copy)
    start = tmp_path / "start"
    procs = [_direct(base_copy, after_mirror, start) for _ in range(2)]
    _wait_for([Path(f"{start}.{p.pid}.ready") for p in procs])
    start.touch()
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in outcomes) in ([0, 0], [0, 1]), outcomes
    for code, out, _ in outcomes:
        lines = out.strip().splitlines()
        assert len(lines) == 1, out
        if code == 1:
            answer = json.loads(lines[0])
            assert answer["error"] == "PublishConflict" and "nothing was published" in answer["message"], answer
    assert_still_there(base_copy, before)
    assert_current_is_whole(base_copy)
    now = contents(base_copy)
    assert duplicates(now["fact_result"]) == []
    assert now == clean_after
