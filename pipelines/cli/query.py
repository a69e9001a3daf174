"""Commands that read the warehouse: ``sql``."""

from __future__ import annotations

import sys
from typing import Annotated

import duckdb
import typer

from pipelines.cli.app import WarehouseOpt, app, database_path


@app.command()
def sql(
    query: Annotated[str | None, typer.Argument(help="One SQL query; omit for an interactive prompt.")] = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Run SQL against liger.duckdb (read-only)."""
    con = duckdb.connect(str(database_path(warehouse)), read_only=True)
    if query is not None:
        print(con.sql(query))
        return
    while True:
        try:
            line = input("liger> ")
        except EOFError:
            return
        if line.strip():
            try:
                print(con.sql(line))
            except duckdb.Error as exc:
                print(exc, file=sys.stderr)
