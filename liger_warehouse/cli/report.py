"""Commands that present the warehouse: ``report``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from liger_warehouse.cli.app import WarehouseOpt, app, console, open_database


@app.command()
def report(
    out: Annotated[Path, typer.Option(help="Directory to write index.html and the PNG renders into.")],
    warehouse: WarehouseOpt = None,
    png: Annotated[bool, typer.Option(help="Also render the overview charts as PNG files.")] = True,
) -> None:
    """Write the benchmark report: one self-contained HTML page (no network needed to view it)."""
    from liger_warehouse.report.build import build_report  # Altair and vl-convert load only for this command

    con = open_database(warehouse)
    try:
        with console.status("building the report…"):
            built = build_report(con, out, png=png)
    finally:
        con.close()
    console.print(f"{built.html} ({built.charts} charts, generation {built.generation})")
    for path in built.pngs.values():
        console.print(str(path))
    if built.missing_views:
        missing = ", ".join(built.missing_views)
        console.print(f"[yellow]no {missing} view in this warehouse: those sections are empty[/yellow]")
