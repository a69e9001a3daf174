"""The lake opened the way any DuckDB client opens it, without the project's reader: ATTACH of
its catalog, read-only (README, "Questions people ask")."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from liger_warehouse.lake import extensions


def open_views(catalog: Path) -> duckdb.DuckDBPyConnection:
    """Read-only, with the lake's data where its catalog sits (``<root>/lake/``), waiting out a
    commit as the README advises. Extensions come from their pip packages, as a machine without
    an extension repository needs (loaded as the warehouse loads them, without hashing each file
    on every connection)."""
    names = ["ducklake", "sqlite_scanner"]
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", **extensions.connect_config(names)})
    extensions.load(con, names)
    data = catalog.parent / "lake"
    options = f"read_only, data_path '{data}/', override_data_path true, meta_busy_timeout 120000"
    con.execute(f"attach 'ducklake:sqlite:{catalog}' as liger ({options})")
    con.execute("use liger")
    return con


def lake_table(root: Path, table: str, columns: list[str] | None = None, order: list[str] | None = None) -> pa.Table:
    """One lake table of warehouse ``root`` as Arrow, in its schema (``order``: sorted so)."""
    from liger_warehouse.model.tables import SCHEMAS

    with open_views(root / "catalog.sqlite") as con:
        listed = ", ".join(columns) if columns else "*"
        sort = f" order by {', '.join(order)}" if order else ""
        data = con.execute(f"select {listed} from {table}{sort}").to_arrow_table()
    schema = SCHEMAS.get(table)
    return data.cast(pa.schema([schema.field(n) for n in data.column_names])) if schema else data
