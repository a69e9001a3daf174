"""Configuration lives in one place: liger_warehouse/settings.py reads the environment, and the
resources, schedules, CLI, upstream reader and DuckDB layer ask it; the CLI hands its options to
Dagster as run config instead of changing the environment."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse import settings
from liger_warehouse.cli import app
from liger_warehouse.cli.warehouse import _run_config
from liger_warehouse.lake.connect import cache_dir, open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.open import settings_from_env
from pipelines.defs.resources import resources
from pipelines.defs.schedules import nightly_refresh, refresh_executor
from tests.conftest import env

PROJECT = Path(__file__).resolve().parents[1]
SETTINGS = PROJECT / "liger_warehouse" / "settings.py"


def _environment_reads(path: Path) -> list[str]:
    """Where ``path`` reads the environment: os.getenv, os.environ, or an EnvVar but GITHUB_TOKEN's."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if _reads_os_environment(node) or (_is_env_var(node) and not _names_the_token(node)):
            found.append(f"{path.relative_to(PROJECT)}:{node.lineno}")
    return found


def _reads_os_environment(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
        and node.attr in {"getenv", "environ", "putenv", "unsetenv"}
    )


def _is_env_var(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "EnvVar"


def _names_the_token(call: ast.Call) -> bool:
    return bool(call.args) and isinstance(call.args[0], ast.Constant) and call.args[0].value == "GITHUB_TOKEN"


def test_only_settings_reads_the_environment():
    modules = [p for package in ("liger_warehouse", "pipelines") for p in (PROJECT / package).rglob("*.py")]
    reads = [read for path in modules if path != SETTINGS for read in _environment_reads(path)]
    assert not reads, reads
    assert _environment_reads(SETTINGS), "settings.py is where the environment is read"


def test_every_reader_takes_the_settings_object(tmp_path):
    with env(
        LIGER_WAREHOUSE_DIR=str(tmp_path / "wh"),
        LIGER_WAREHOUSE_UPSTREAM=str(tmp_path),
        LIGER_WAREHOUSE_MAX_ATTEMPTS="7",
        LIGER_WAREHOUSE_CACHE_DIR=str(tmp_path / "cache"),
        LIGER_WAREHOUSE_SCHEDULE="",  # empty counts as unset
        LIGER_WAREHOUSE_EXECUTOR="multiprocess",
        LIGER_WAREHOUSE_MAX_CONCURRENT="3",
        GITHUB_TOKEN="secret-value",
    ):
        current = settings.current()
        assert (current.dir, current.max_attempts, current.schedule) == (str(tmp_path / "wh"), 7, "0 2 * * *")
        assert "secret-value" not in repr(current)
        configured = resources().resources
        assert configured["warehouse"].root == str(tmp_path / "wh")
        assert configured["upstream"].upstream == str(tmp_path)
        # Everything else about upstream is read from the settings when the run reads upstream,
        # so the token is never part of the resource's config.
        assert configured["upstream"].settings().policy.max_attempts == 7
        assert "secret-value" not in repr(configured["upstream"])
        assert settings_from_env().policy.max_attempts == 7
        assert settings_from_env("elsewhere").upstream == "elsewhere"
        assert cache_dir() == tmp_path / "cache"
        assert refresh_executor().name == "multiprocess"
    assert nightly_refresh.cron_schedule == "0 2 * * *"


def test_the_cli_passes_its_options_as_run_config(tmp_path):
    config = _run_config(Storage(str(tmp_path)), None, "some/mirror")
    assert config["resources"]["upstream"] == {"config": {"upstream": "some/mirror"}}
    root = Storage(str(tmp_path)).url
    lake = {"root": root, "catalog": f"sqlite:{root}/catalog.sqlite", "data": f"{root}/lake/"}
    assert config["resources"]["warehouse"] == {"config": lake}, "the run writes the lake the settings name"
    assert "upstream" not in _run_config(Storage(str(tmp_path)), None)["resources"]

    before = dict(os.environ)
    result = CliRunner().invoke(app, ["status", "-w", str(tmp_path / "none"), "--upstream", str(tmp_path)])
    assert result.exit_code == 1, result.output  # nothing published yet
    assert dict(os.environ) == before


def test_a_bad_value_names_its_variable():
    with (
        env(LIGER_WAREHOUSE_MAX_ATTEMPTS="many"),
        pytest.raises(settings.SettingsError, match="LIGER_WAREHOUSE_MAX_ATTEMPTS"),
    ):
        settings.current()
    with env(LIGER_WAREHOUSE_CHANGE_POINT_WORKERS="0"), pytest.raises(settings.SettingsError, match=">= 1"):
        settings.current()
    with env(LIGER_WAREHOUSE_TIMEOUT_SECONDS="2.5", LIGER_WAREHOUSE_CHANGE_POINT_WORKERS="3"):
        assert (settings.current().timeout_seconds, settings.current().change_point_workers) == (2.5, 3)
    with env(LIGER_WAREHOUSE_DIR="", LIGER_WAREHOUSE_MAX_ATTEMPTS="many"):
        done = CliRunner().invoke(app, ["status"])
    assert done.exit_code == 1
    assert "LIGER_WAREHOUSE_MAX_ATTEMPTS" in done.output and "fix or unset that variable" in done.output, done.output


def test_a_writer_spills_into_a_folder_of_its_own_that_goes_with_its_connection(tmp_path: Path) -> None:
    """Two processes that shared one spill folder deleted each other's files, and DuckDB aborts on
    that: each process spills into a folder named by its pid, made only when a query spills."""
    cache = tmp_path / "cache"
    spill = cache / f"duckdb-spill-{os.getpid()}"
    with env(LIGER_WAREHOUSE_CACHE_DIR=str(cache), LIGER_WAREHOUSE_DUCKDB_MEMORY_LIMIT="64MB"):
        con = open_lake(Lake.of(str(tmp_path / "warehouse")))
        try:
            assert con.execute("select current_setting('temp_directory')").fetchone() == (str(spill),)
            assert not spill.exists()
            con.execute("select * from range(3000000) as r(i) order by md5(i::varchar)").fetchmany(1)
            assert any(spill.iterdir())
        finally:
            con.close()
    assert not spill.exists() and cache.is_dir()
