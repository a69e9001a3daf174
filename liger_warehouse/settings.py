"""Environment variables the warehouse reads, in one place."""

from __future__ import annotations

import os

WAREHOUSE_DIR = "LIGER_WAREHOUSE_DIR"
UPSTREAM = "LIGER_WAREHOUSE_UPSTREAM"
GITHUB_API = "LIGER_WAREHOUSE_GITHUB_API"
GITHUB_RAW = "LIGER_WAREHOUSE_GITHUB_RAW"
SCHEDULE = "LIGER_WAREHOUSE_SCHEDULE"


def warehouse_dir() -> str:
    return os.getenv(WAREHOUSE_DIR, "warehouse")
