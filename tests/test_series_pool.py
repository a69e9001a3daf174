"""The worker processes that compute change points (liger_warehouse/analysis/series_pool.py)
end with the process that started them, whatever way it ends."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

# Starts a pool, waits until both workers have loaded, prints their pids and kills itself.
_KILLED_WITH_WORKERS = """
import os, signal, time
import psutil
from liger_warehouse.analysis.series_pool import SeriesPool
pool = SeriesPool(2)
pool.start()
for _ in range(600):
    workers = [p.pid for p in psutil.Process().children(recursive=True) if "forkserver" in " ".join(p.cmdline())]
    if len(workers) >= 3:  # the fork server and its two workers
        break
    time.sleep(0.1)
print(*workers, flush=True)
time.sleep(1)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_end_when_their_refresh_is_killed():
    """A killed refresh leaves no worker waiting for batches: had one stayed, it would hold this
    test's pipe open and ``run`` would time out."""
    done = subprocess.run([sys.executable, "-c", _KILLED_WITH_WORKERS], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 3
    deadline = time.monotonic() + 30
    while _running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(pids) == []


def _running(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (an ended process not yet reaped is a zombie)."""
    running = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            pass
    return running


# A fork server's socket lives in TMPDIR; a path too long for a Unix socket means no worker can
# start. The resource then computes in the step's own process and says why.
_UNSTARTABLE = """
import logging
import dagster as dg
from pipelines.defs.resources import ChangePointResource
resource = ChangePointResource(workers=2)
resource.setup_for_execution(dg.build_init_resource_context())
print("pool:", resource.pool(logging.getLogger("test")))
resource.teardown_after_execution(dg.build_init_resource_context())
"""


def test_change_points_fall_back_to_the_step_process_when_no_worker_can_start(tmp_path):
    """The workers start in the background (the run does not wait for the fork server's
    imports); a start that failed is found when the step asks for the pool."""
    tmpdir = tmp_path / ("t" * 120)
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    done = subprocess.run([sys.executable, "-c", _UNSTARTABLE], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "pool: None" in done.stdout
    assert "no worker could start" in done.stderr


# Starts the resource's workers, waits until they have loaded, releases them as the change point
# step does when it is done, and prints how many workers there were before and after.
_RELEASED = """
import logging, time
import dagster as dg
import psutil
from pipelines.defs.resources import ChangePointResource


def workers():
    server = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    return [c for s in server for c in s.children() if c.status() != psutil.STATUS_ZOMBIE]


resource = ChangePointResource(workers=2)
resource.setup_for_execution(dg.build_init_resource_context())
pool = resource.pool(logging.getLogger("test"))
for _ in range(600):
    if len(workers()) >= 2:
        break
    time.sleep(0.1)
print("before:", len(workers()))
resource.release()
print("after:", len(workers()), "pool:", resource.pool(logging.getLogger("test")))
resource.teardown_after_execution(dg.build_init_resource_context())
"""


def test_the_workers_stop_once_the_change_points_are_computed():
    """Released, the workers end (the steps after the change points do not carry their memory)
    and the step's process would compute change points itself."""
    done = subprocess.run([sys.executable, "-c", _RELEASED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "before: 2" in done.stdout
    assert "after: 0 pool: None" in done.stdout
