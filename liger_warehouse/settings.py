"""Every setting the warehouse takes from the environment, in one object.

``LIGER_WAREHOUSE_<FIELD>`` sets a field (``LIGER_WAREHOUSE_DIR`` sets ``dir``); ``GITHUB_TOKEN``,
``DAGSTER_HOME`` and ``XDG_CACHE_HOME`` keep their usual names. Nothing else in the project reads
the environment: the Dagster resources and schedules, the CLI, the upstream reader and the
DuckDB layer all ask ``current()``, which reads the environment as it is now (tests
and subprocesses change it between calls). An empty variable counts as unset.
"""

from __future__ import annotations

import os
from typing import Annotated

import msgspec

PREFIX = "LIGER_WAREHOUSE_"
# Variable names, for code that sets them for a subprocess (tests, benchmarks).
WAREHOUSE_DIR = f"{PREFIX}DIR"
UPSTREAM = f"{PREFIX}UPSTREAM"
GITHUB_API = f"{PREFIX}GITHUB_API"
GITHUB_RAW = f"{PREFIX}GITHUB_RAW"
SCHEDULE = f"{PREFIX}SCHEDULE"
EXECUTOR = f"{PREFIX}EXECUTOR"
MAX_CONCURRENT = f"{PREFIX}MAX_CONCURRENT"
CACHE_DIR = f"{PREFIX}CACHE_DIR"
DUCKDB_MEMORY_LIMIT = f"{PREFIX}DUCKDB_MEMORY_LIMIT"
DUCKDB_THREADS = f"{PREFIX}DUCKDB_THREADS"
COMMIT_WAIT_SECONDS = f"{PREFIX}COMMIT_WAIT_SECONDS"
CHANGE_POINT_WORKERS = f"{PREFIX}CHANGE_POINT_WORKERS"
S3_ENDPOINT = f"{PREFIX}S3_ENDPOINT"
CATALOG = f"{PREFIX}CATALOG"
DATA = f"{PREFIX}DATA"
FAILPOINT = f"{PREFIX}FAILPOINT"
PAUSE = f"{PREFIX}PAUSE"
# The fields that keep a variable's usual name.
USUAL_NAMES = {
    "github_token": "GITHUB_TOKEN",
    "xdg_cache_home": "XDG_CACHE_HOME",
    "dagster_home": "DAGSTER_HOME",
    "aws_access_key_id": "AWS_ACCESS_KEY_ID",
    "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "aws_region": "AWS_REGION",
}

DEFAULT_UPSTREAM = "github:linkedin/Liger-Kernel"
DEFAULT_API_BASE = "https://api.github.com"
DEFAULT_RAW_BASE = "https://raw.githubusercontent.com"


def _variable(field: str) -> str:
    return USUAL_NAMES.get(field, f"{PREFIX}{field.upper()}")


class Settings(msgspec.Struct, frozen=True, rename=_variable):
    """The warehouse's settings (README: Configuration).

    A msgspec Struct, not pydantic-settings: every command builds it, and pydantic's import
    cost a reading command more than DuckDB's (docs/PERFORMANCE.md, "startup").
    """

    # The warehouse root: a directory or an object-store URI; it holds raw/ and, by default, the lake.
    dir: str = "warehouse"
    # The DuckLake catalog (sqlite:PATH or postgres:dbname=… host=…); else <dir>/catalog.sqlite.
    catalog: str | None = None
    # Where the lake's Parquet files go (a directory or s3://…); else <dir>/lake/.
    data: str | None = None
    # github:OWNER/REPO or a mirror directory.
    upstream: str = DEFAULT_UPSTREAM
    github_api: str = DEFAULT_API_BASE
    github_raw: str = DEFAULT_RAW_BASE
    github_token: str | None = None
    timeout_seconds: float = 30.0
    max_attempts: int = 5
    backoff_seconds: float = 1.0
    max_download_mb: int = 256
    # The nightly refresh's cron schedule (UTC).
    schedule: str = "0 2 * * *"
    # The refresh job's executor: in_process or multiprocess.
    executor: str = "in_process"
    max_concurrent: int = 4
    # Local scratch space; else $XDG_CACHE_HOME/liger-warehouse.
    cache_dir: str | None = None
    xdg_cache_home: str | None = None
    duckdb_memory_limit: str | None = None
    # DuckDB's threads on every connection the warehouse opens; else one per core.
    duckdb_threads: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # How long a commit to a SQLite catalog waits for readers' open transactions; readers wait
    # twice that for a commit (liger_warehouse/lake/connect.py).
    commit_wait_seconds: Annotated[float, msgspec.Meta(gt=0)] = 60.0
    # Processes that compute change points in a refresh; else one per core.
    change_point_workers: Annotated[int, msgspec.Meta(ge=1)] | None = None
    s3_endpoint: str | None = None
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None
    aws_region: str | None = None
    # Webhooks that receive the nightly digest (liger_warehouse/alerts/webhook.py), space-separated.
    alert_webhook: str | None = None
    # A GitHub repository (owner/name) that gets an issue per newly confirmed regression, and a
    # token that may write its issues (liger_warehouse/alerts/github_issues.py); both or neither.
    alert_github_repo: str | None = None
    alert_github_token: str | None = None
    dagster_home: str | None = None

    def __repr__(self) -> str:
        # Keeps the token out of logs and tracebacks that print the settings.
        secret = ("github_token", "alert_github_token", "aws_secret_access_key")
        shown = (f"{name}={value!r}" for name, value in msgspec.structs.asdict(self).items() if name not in secret)
        return f"Settings({', '.join(shown)})"


VARIABLES = frozenset(_variable(field) for field in Settings.__struct_fields__)


class SettingsError(ValueError):
    """An environment variable the warehouse reads has a value it cannot take."""


def current() -> Settings:
    """The settings as the environment has them now."""
    given = {name: value for name, value in os.environ.items() if name in VARIABLES and value}
    try:
        # strict=False: a variable's text becomes the field's int or float.
        return msgspec.convert(given, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid environment variable: {exc}") from None


def fault_injection() -> tuple[str | None, str | None]:
    """``LIGER_WAREHOUSE_FAILPOINT`` and ``LIGER_WAREHOUSE_PAUSE`` (liger_warehouse/runtime/failpoints.py).
    Read apart from ``Settings``: every part write asks, and building ``Settings`` takes milliseconds."""
    return os.environ.get(FAILPOINT) or None, os.environ.get(PAUSE) or None


def named_by_run_config(variable: str) -> str | None:
    """The value of ``variable`` that a run config names as ``{"env": variable}``, as Dagster
    resolves it when the run starts (pipelines/defs/last_refresh.py reads a run's root so)."""
    return os.environ.get(variable) or None
