"""``liger-warehouse``: one module per group of commands, all on one Typer app."""

from liger_warehouse.cli import export, query, report, warehouse  # noqa: F401  (modules register their commands)
from liger_warehouse.cli.app import app

__all__ = ["app"]
