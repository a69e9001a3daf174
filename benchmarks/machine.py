"""What a benchmark ran on: the machine, the library versions and the load average at its start."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def machine(note: str) -> dict:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if "model name" in line]
        cpu = names[0] if names else cpu
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": psutil.virtual_memory().total / 2**30,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        **{name: version(name) for name in ("duckdb", "polars", "pyarrow", "dagster")},
        "load_start": os.getloadavg()[0],
        "note": note,
    }


def repository() -> dict:
    """The commit measured and what differs from it where the numbers come from."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    paths = ("sql", "liger_warehouse", "benchmarks", "pipelines")
    uncommitted = git("status", "--porcelain", "--", *paths).splitlines()
    return {"commit": git("rev-parse", "HEAD").strip(), "uncommitted": uncommitted}
