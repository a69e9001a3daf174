"""``liger-warehouse``: one module per group of commands, all on one Typer app."""

from pipelines.cli import export, query, report, warehouse  # noqa: F401  (modules register their commands)
from pipelines.cli.app import app

__all__ = ["app"]
