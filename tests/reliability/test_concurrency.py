"""Concurrency: readers during a refresh, two refreshes at once, and the locks behind them.

The published database is replaced whole (built beside it, then ``os.replace``) and the
Parquet parts it references are immutable and never deleted, so a reader sees the previous
generation or the next one and never an error. Two refreshes of one warehouse are kept apart
by the ``refresh`` lock of the CLI (the second exits 3 with a clear message), the ``build``
lock of the staging step and the compare-and-swap of the publish.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from liger_warehouse.store.generations import (
    Generation,
    GenerationStore,
    PublishConflict,
    RefreshBusy,
    new_generation_id,
)
from liger_warehouse.store.storage import Storage
from tests import fake_github as fg
from tests.conftest import refresh
from tests.fake_github import FakeGitHub
from tests.reliability.conftest import github_env
from tests.reliability.published import (
    assert_current_is_whole,
    assert_locks_free,
    assert_still_there,
    cli_env,
    cli_refresh,
    cli_script,
    contents,
    dagster_home,
    database_generation,
    gens_of,
    published,
    step_failures,
)
from tests.reliability.upstreams import DATA, commits

ROOT = Path(__file__).resolve().parents[2]


def _flat(text: str) -> str:
    """Console output without the line breaks rich wraps it with."""
    return " ".join(text.split())


def _start_reader(db: Path, mode: str, stop: Path, out: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.reliability.reader", str(db), mode, str(stop), str(out)]
    return subprocess.Popen(args, cwd=ROOT)


def _wait_for(paths: list[Path], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"readers never got going: {paths}"
        time.sleep(0.05)


def test_readers_query_every_view_during_a_refresh_without_an_error(base_copy, after_github, tmp_path):
    db, stop = base_copy / "liger.duckdb", tmp_path / "stop"
    old = database_generation(db)
    outs = {mode: tmp_path / f"{mode}.json" for mode in ("fresh", "held")}
    readers = [_start_reader(db, mode, stop, out) for mode, out in outs.items()]
    try:
        _wait_for([Path(f"{out}.ready") for out in outs.values()])
        done = cli_refresh(base_copy, cli_env(dagster_home(tmp_path / "dagster"), **github_env(after_github)))
        assert done.returncode == 0, done.stderr[-3000:]
        new = database_generation(db)
        # Let the fresh reader open the new database a few times before stopping.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and new not in _peek(outs["fresh"]):
            time.sleep(0.2)
    finally:
        stop.touch()
        for reader in readers:
            reader.wait(timeout=60)
    fresh, held = (json.loads(out.read_text()) for out in outs.values())
    assert fresh["errors"] == [] and held["errors"] == []
    assert fresh["rounds"] > 1 and held["rounds"] > 1
    assert fresh["generations"] == [old, new]  # it went from the old database to the new one
    assert held["generations"] == [old]  # one connection keeps one consistent generation


def _peek(out: Path) -> list[str]:
    """The generations a reader has seen so far."""
    seen = Path(f"{out}.seen")
    return json.loads(seen.read_text()) if seen.exists() else []


def test_two_refreshes_at_once_one_waits_out_and_nothing_is_corrupted(base_copy, after_mirror, clean_after, tmp_path):
    before = published(base_copy)
    with FakeGitHub(after_mirror) as fake:
        # Slow the first download down so that the two refreshes surely overlap.
        newest = commits(after_mirror, DATA)[0]["sha"]
        fake.inject(f"/raw/*/{newest}/*", fg.stall(1.5), times=1)
        procs = [
            subprocess.Popen(
                [*cli_script(), "refresh", "--warehouse", str(base_copy)],
                env=cli_env(dagster_home(tmp_path / f"dagster{i}"), **github_env(fake)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        outcomes = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in outcomes)
    assert codes in ([0, 3], [0, 0]), outcomes
    for code, stderr in outcomes:
        if code == 3:
            assert f"another refresh of {base_copy.resolve()} is running" in _flat(stderr)
    assert_locks_free(base_copy)
    assert_still_there(base_copy, before)
    assert_current_is_whole(base_copy)
    assert contents(base_copy) == clean_after


def test_refresh_while_the_lock_is_held_exits_3_with_a_clear_message(base_copy, after_github, tmp_path):
    before = published(base_copy)
    env = cli_env(dagster_home(tmp_path / "dagster"), **github_env(after_github))
    with gens_of(base_copy).try_lock("refresh"):
        done = cli_refresh(base_copy, env)
    assert done.returncode == 3
    assert f"another refresh of {base_copy.resolve()} is running" in _flat(done.stderr)
    assert published(base_copy) == before


def test_a_job_run_while_another_builds_fails_cleanly(base_copy, after_github):
    """The schedule runs the job without the CLI's lock; the build lock still keeps it out."""
    before = published(base_copy)
    with gens_of(base_copy).try_lock("build"):
        done = refresh(base_copy, after_github)
    assert not done.result.success
    assert any("another refresh of" in m for m in step_failures(done.result))
    assert published(base_copy) == before
    assert refresh(base_copy, after_github).result.success


def test_publish_is_a_compare_and_swap(base_copy):
    gens = GenerationStore(Storage(base_copy))
    parent = gens.current()
    first, second = (
        Generation(id=new_generation_id(), parent=parent.id, created_at="now", tables=dict(parent.tables))
        for _ in range(2)
    )
    for gen in (first, second):
        gens.stage(gen)
    gens.publish(first)
    with pytest.raises(PublishConflict, match=f"built on {parent.id}, but {first.id} was published meanwhile"):
        gens.publish(second)
    assert gens.current_id() == first.id


HOLD_LOCK = """
import sys, time
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.storage import Storage
lock = GenerationStore(Storage(sys.argv[1])).try_lock("refresh")
print("held", flush=True)
time.sleep(60)
"""


def test_a_lock_dies_with_its_holder(base_copy):
    """filelock's UnixFileLock is flock(2): the kernel drops it when the process dies."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(base_copy)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RefreshBusy):
            gens_of(base_copy).try_lock("refresh")
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(timeout=30) == -signal.SIGKILL
    finally:
        holder.kill()
    assert_locks_free(base_copy)
