"""The lake opened the way any DuckDB client opens it, without the project's reader: ATTACH of
its catalog, read-only (README, "Questions people ask")."""

from __future__ import annotations

from pathlib import Path

import duckdb

from liger_warehouse.lake import extensions


def open_views(catalog: Path) -> duckdb.DuckDBPyConnection:
    """Read-only, with the lake's data where its catalog sits (``<root>/lake/``). Extensions come
    from their pip packages, as a machine without an extension repository needs."""
    con = duckdb.connect(config={"autoinstall_known_extensions": "false"})
    extensions.load(con, ["ducklake", "sqlite_scanner"])
    data = catalog.parent / "lake"
    con.execute(f"attach 'ducklake:sqlite:{catalog}' as liger (read_only, data_path '{data}/', override_data_path true)")
    con.execute("use liger")
    return con
