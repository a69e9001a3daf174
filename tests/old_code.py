"""The project as an earlier commit had it, taken from git (``git archive``), and the script that
runs its refresh job in a subprocess: for tests of what today's code makes of a warehouse that
older code built."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Run with the old code first on PYTHONPATH and the LIGER_WAREHOUSE_* settings in the environment.
BUILD = """
import sys
import dagster as dg
from pipelines.definitions import load
with dg.DagsterInstance.ephemeral() as instance:
    result = load().resolve_job_def("refresh").execute_in_process(instance=instance, raise_on_error=False)
sys.exit(0 if result.success else 1)
"""


def git(*args: str) -> bytes:
    """``git args`` in the repository; the test skips without git or without its history."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the old code comes from the repository's history")
    try:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout
    except subprocess.CalledProcessError:
        pytest.skip("not a git checkout with history: the old code comes from the repository's history")


def extract(commit: str, target: Path) -> Path:
    """The tree of ``commit`` written into ``target``."""
    with tarfile.open(fileobj=io.BytesIO(git("archive", "--format=tar", commit))) as tar:
        tar.extractall(target, filter="data")
    return target
