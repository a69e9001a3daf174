"""liger.duckdb opened the way any DuckDB client opens it, without the project's reader."""

from __future__ import annotations

from pathlib import Path

import duckdb


def open_views(database: Path) -> duckdb.DuckDBPyConnection:
    """Read-only, with ``file_search_path`` naming the warehouse root the views read their parts
    from: the directory of the file (README, "Questions people ask")."""
    return duckdb.connect(str(database), read_only=True, config={"file_search_path": str(database.parent)})
