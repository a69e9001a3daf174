"""Run one measured step in its own process: wall time, peak memory of the whole process tree
and the JSON the step prints as its last line of output.

Peak memory is the larger of two readings: the kernel's ``ru_maxrss`` of the child (``wait4``)
and the sum of RSS over the child and all its descendants, sampled every 50 ms (which also
catches a grandchild that outlives its parent's wait). Samples are timestamped so that a step's
peak can be placed within its phases. A tree that grows past ``rss_cap`` is killed, so a run
that would exhaust a shared machine's memory ends with a recorded failure instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SAMPLE_SECONDS = 0.05


@dataclass
class Measured:
    ok: bool
    wall: float
    peak_rss: int  # bytes, the whole process tree
    output: dict
    samples: list[tuple[float, int]] = field(default_factory=list)
    error: str = ""

    def peak_between(self, start: float, end: float) -> int:
        """Peak tree RSS sampled while ``start <= t <= end`` (epoch seconds)."""
        return max((rss for t, rss in self.samples if start <= t <= end), default=0)


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


class _Sampler(threading.Thread):
    def __init__(self, pid: int, rss_cap: int | None) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.rss_cap = rss_cap
        self.samples: list[tuple[float, int]] = []
        self.capped = False
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rss = _tree_rss(self.proc)
            except psutil.Error:
                return
            self.samples.append((time.time(), rss))
            if self.rss_cap and rss > self.rss_cap:
                self.capped = True
                _kill_tree(self.proc)
                return
            self.stop.wait(SAMPLE_SECONDS)


def _kill_tree(proc: psutil.Process) -> None:
    for p in [*proc.children(recursive=True), proc]:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue


def run_step(
    module: str, args: list[str], log_dir: Path, env: dict[str, str] | None = None, rss_cap: int | None = None
) -> Measured:
    """``python -m <module> <args>`` measured; its stdout and stderr go to ``log_dir``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = f"{module.rsplit('.', 1)[-1]}-{time.time_ns()}"
    out_path, err_path = log_dir / f"{stamp}.out", log_dir / f"{stamp}.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", module, *args], stdout=out, stderr=err, env=env)
        sampler = _Sampler(child.pid, rss_cap)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        sampler.stop.set()
        sampler.join()
    peak = max(usage.ru_maxrss * 1024, max((rss for _, rss in sampler.samples), default=0))
    output, error = _last_json(out_path), ""
    if sampler.capped:
        error = f"killed: process tree passed the {rss_cap / 2**30:.1f} GiB cap"
    elif child.returncode != 0:
        error = f"exit {child.returncode}; see {err_path}"
    ok = not error and output.get("ok", True)
    return Measured(ok, wall, peak, output, sampler.samples, error or output.get("error", ""))


def _last_json(path: Path) -> dict:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.startswith("{")]
    try:
        return json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
