"""The Typer app and the options every command shares."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import duckdb
import typer
from rich.console import Console

from pipelines import settings
from pipelines.database import fetch_database, open_duckdb
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


def database_path(warehouse: str | None) -> Path:
    """liger.duckdb of the warehouse (a local copy for an object-store root), or a clear exit
    when there is none yet."""
    try:
        return fetch_database(Storage(warehouse_root(warehouse)))
    except FileNotFoundError as exc:
        console.print(str(exc))
        raise typer.Exit(1) from None


def open_database(warehouse: str | None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to liger.duckdb that also resolves object-store URIs."""
    storage = Storage(warehouse_root(warehouse))
    return open_duckdb(storage, str(database_path(warehouse)), read_only=True)
