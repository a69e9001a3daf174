"""The Typer app and the options every command shares."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from pipelines import settings
from pipelines.database import DATABASE
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
    """liger.duckdb of the warehouse, or a clear exit when there is none yet."""
    path = Path(Storage(warehouse_root(warehouse)).root) / DATABASE
    if not path.exists():
        console.print(f"no database at {path}: run `liger-warehouse refresh` first")
        raise typer.Exit(1)
    return path
