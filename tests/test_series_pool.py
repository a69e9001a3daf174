"""The worker processes that compute change points (liger_warehouse/analysis/series_pool.py)
end with the process that started them, whatever way it ends."""

from __future__ import annotations

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
