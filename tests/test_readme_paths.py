"""Running the README's commands in a checkout leaves `git status` clean: every path they write
(their ``--out`` paths, the default warehouse, the Dagster instance and Dagster's scratch
directory) is git-ignored."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
# Written by the commands without an option naming them.
DEFAULTS = [
    "warehouse/catalog.sqlite",
    "warehouse/lake/main/fact_result/ducklake-x.parquet",
    ".dagster_home/history/runs.db",
    ".tmp_dagster_home_x/y",
]


def _out_paths() -> list[str]:
    commands = "\n".join(BASH_BLOCK.findall((PROJECT / "README.md").read_text()))
    return re.findall(r"--out\s+(\S+)", commands)


def test_readme_commands_write_only_ignored_paths():
    if shutil.which("git") is None or not (PROJECT / ".git").exists():
        pytest.skip("not a git checkout: nothing to keep clean")
    outs = _out_paths()
    assert len(outs) >= 3, outs  # export kernelindex, export liger-csv, report
    for path in [*outs, *DEFAULTS]:
        probe = path.rstrip("/") + ("/index.html" if path.endswith("/") else "")
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", probe], cwd=PROJECT, check=False)
        assert ignored.returncode == 0, f"{path} (from README.md) is not git-ignored"
