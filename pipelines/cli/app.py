"""The Typer app and the options every command shares."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import duckdb
import typer
from rich.console import Console

from pipelines import settings
from pipelines.database import connect
from pipelines.store.storage import Storage

app = typer.Typer(help="The warehouse of record for Liger-Kernel benchmark results.", no_args_is_help=True)
console = Console(stderr=True)


@app.callback()
def main() -> None:
    """Refresh the warehouse from upstream, inspect it, query it and export from it."""


WarehouseOpt = Annotated[
    str | None, typer.Option("--warehouse", "-w", help="Warehouse root (default $LIGER_WAREHOUSE_DIR or ./warehouse).")
]


def warehouse_root(warehouse: str | None) -> str:
    if warehouse:
        os.environ[settings.WAREHOUSE_DIR] = warehouse
    return settings.warehouse_dir()


def open_database(warehouse: str | None, allow_read: Sequence[Path] = ()) -> duckdb.DuckDBPyConnection:
    """A locked-down connection to the views of the warehouse (``pipelines.database.connect``),
    or a clear exit when there is no liger.duckdb yet."""
    try:
        return connect(Storage(warehouse_root(warehouse)), allow_read)
    except FileNotFoundError as exc:
        console.print(str(exc))
        raise typer.Exit(1) from None
