"""Every setting the warehouse takes from the environment, in one object.

``LIGER_WAREHOUSE_<FIELD>`` sets a field (``LIGER_WAREHOUSE_DIR`` sets ``dir``); ``GITHUB_TOKEN``,
``DAGSTER_HOME`` and ``XDG_CACHE_HOME`` keep their usual names. Nothing else in the project reads
the environment: the Dagster resources and schedules, the CLI, the upstream reader and the
DuckDB layer all ask ``current()``, which reads the environment as it is now (tests
and subprocesses change it between calls). An empty variable counts as unset.
"""

from __future__ import annotations

import os

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

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
CHANGE_POINT_WORKERS = f"{PREFIX}CHANGE_POINT_WORKERS"
S3_ENDPOINT = f"{PREFIX}S3_ENDPOINT"
FAILPOINT = f"{PREFIX}FAILPOINT"
PAUSE = f"{PREFIX}PAUSE"

DEFAULT_UPSTREAM = "github:linkedin/Liger-Kernel"
DEFAULT_API_BASE = "https://api.github.com"
DEFAULT_RAW_BASE = "https://raw.githubusercontent.com"


class Settings(BaseSettings):
    """The warehouse's settings (README: Configuration)."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True, extra="ignore")

    dir: str = Field("warehouse", description="The warehouse root: a directory or an object-store URI.")
    upstream: str = Field(DEFAULT_UPSTREAM, description="github:OWNER/REPO or a mirror directory.")
    github_api: str = DEFAULT_API_BASE
    github_raw: str = DEFAULT_RAW_BASE
    github_token: str | None = Field(None, validation_alias="GITHUB_TOKEN", repr=False)
    timeout_seconds: float = 30.0
    max_attempts: int = 5
    backoff_seconds: float = 1.0
    max_download_mb: int = 256
    schedule: str = Field("0 2 * * *", description="The nightly refresh's cron schedule (UTC).")
    executor: str = Field("in_process", description="The refresh job's executor: in_process or multiprocess.")
    max_concurrent: int = 4
    cache_dir: str | None = Field(None, description="Local scratch space; else $XDG_CACHE_HOME/liger-warehouse.")
    xdg_cache_home: str | None = Field(None, validation_alias="XDG_CACHE_HOME")
    duckdb_memory_limit: str | None = None
    change_point_workers: int | None = Field(
        None, ge=1, description="Processes that compute change points in a refresh; else one per core."
    )
    s3_endpoint: str | None = None
    dagster_home: str | None = Field(None, validation_alias="DAGSTER_HOME")


def current() -> Settings:
    """The settings as the environment has them now."""
    return Settings()


def fault_injection() -> tuple[str | None, str | None]:
    """``LIGER_WAREHOUSE_FAILPOINT`` and ``LIGER_WAREHOUSE_PAUSE`` (liger_warehouse/runtime/failpoints.py).
    Read apart from ``Settings``: every part write asks, and building ``Settings`` takes milliseconds."""
    return os.environ.get(FAILPOINT) or None, os.environ.get(PAUSE) or None
