"""Environment variables the warehouse reads, in one place."""

from __future__ import annotations

import os
from pathlib import Path

WAREHOUSE_DIR = "LIGER_WAREHOUSE_DIR"
UPSTREAM = "LIGER_WAREHOUSE_UPSTREAM"
GITHUB_API = "LIGER_WAREHOUSE_GITHUB_API"
GITHUB_RAW = "LIGER_WAREHOUSE_GITHUB_RAW"
SCHEDULE = "LIGER_WAREHOUSE_SCHEDULE"
DEFAULT_DAGSTER_HOME = ".dagster_home"


def warehouse_dir() -> str:
    return os.getenv(WAREHOUSE_DIR, "warehouse")


def ensure_dagster_home() -> Path:
    """``$DAGSTER_HOME``, defaulting to ``./.dagster_home`` so runs are always recorded."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(Path(DEFAULT_DAGSTER_HOME).resolve())))
    home.mkdir(parents=True, exist_ok=True)
    return home
