"""Commands that only read start without the refresh's stack (issue 13: an instant CLI).

Each command runs as an operator runs it, in its own interpreter, with ``-X importtime``, which
lists every module the process imported: the assertion is on what was loaded, not on a time
(speed is measured in benchmarks/startup.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Reference
from tests.reliability.published import cli_env, dagster_home

# Dagster and the analysis stack (Otava, SciPy) load only to refresh, import or compute change points.
REFRESH_STACK = {"dagster", "otava", "scipy"}
# The report's chart stack loads only for `report`.
REPORT_STACK = {"altair", "vl_convert"}
# What `sql` and `regressions` do not need either: they only query liger.duckdb (pydantic, which
# took longer to import than DuckDB, comes with Dagster only).
TABLE_STACK = {"pyarrow", "polars", "httpx", "pydantic", "pydantic_core"}


def imported(args: list[str], home: Path) -> set[str]:
    """The top-level packages a ``liger-warehouse`` process imported to run ``args``."""
    return imported_by_python(["-m", "liger_warehouse.cli", *args], home)


def imported_by_python(argv: list[str], home: Path) -> set[str]:
    """The top-level packages ``python argv`` imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {name.split(".")[0] for name in lines}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dagster_home(tmp_path_factory.mktemp("dagster-home"))


def test_help_imports_no_stack(home: Path) -> None:
    assert imported(["--help"], home) & (REFRESH_STACK | REPORT_STACK | TABLE_STACK) == set()


def test_sql_imports_only_duckdb(mirror_warehouse: Reference, home: Path) -> None:
    modules = imported(["sql", "-w", str(mirror_warehouse.root), "select 1"], home)
    assert "duckdb" in modules
    assert modules & (REFRESH_STACK | REPORT_STACK | TABLE_STACK) == set()


def test_regressions_imports_only_duckdb(mirror_warehouse: Reference, home: Path) -> None:
    args = ["regressions", "-w", str(mirror_warehouse.root), "--base", "0.6.3", "--head", "0.7.0"]
    modules = imported([*args, "--gpu", "H100", "--kernel", "cross_entropy"], home)
    assert modules & (REFRESH_STACK | REPORT_STACK | TABLE_STACK) == set()


def test_export_imports_no_refresh_stack(mirror_warehouse: Reference, home: Path, tmp_path: Path) -> None:
    args = ["export", "liger-csv", "-w", str(mirror_warehouse.root), "--run", "81f932a-v0.6.5"]
    modules = imported([*args, "--out", str(tmp_path / "run.csv")], home)
    assert modules & (REFRESH_STACK | REPORT_STACK) == set()


def test_report_imports_no_refresh_stack(mirror_warehouse: Reference, home: Path, tmp_path: Path) -> None:
    modules = imported(["report", "-w", str(mirror_warehouse.root), "--out", str(tmp_path / "report")], home)
    assert "altair" in modules
    assert modules & REFRESH_STACK == set()


def test_status_imports_no_refresh_stack(mirror_warehouse: Reference, home: Path) -> None:
    # status reads its last-refresh line from the warehouse (state/last-refresh.json), not from
    # the Dagster instance.
    modules = imported(["status", "-w", str(mirror_warehouse.root)], home)
    assert modules & (REFRESH_STACK | REPORT_STACK) == set()


def test_loading_the_definitions_imports_no_analysis_or_report_stack(home: Path) -> None:
    # Every run and `dagster` command loads the definitions; Otava and Altair load with the
    # steps that use them.
    modules = imported_by_python(["-c", "from pipelines.definitions import load; load()"], home)
    assert "dagster" in modules
    assert modules & ({"otava", "scipy"} | REPORT_STACK) == set()
