"""Commands that present the warehouse: ``report`` and ``digest``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from liger_warehouse.cli.app import (
    CatalogOpt,
    CliError,
    DataOpt,
    WarehouseOpt,
    app,
    console,
    lake_of,
    open_reader,
    warehouse_root,
)
from liger_warehouse.report.paths import KERNELS
from liger_warehouse.store.storage import Storage


@app.command()
def report(
    out: Annotated[
        Path,
        typer.Option(
            help="Directory to write the report into: index.html, kernels/<kernel>.html, vega-bundle.js, "
            "the PNG renders."
        ),
    ],
    warehouse: WarehouseOpt = None,
    png: Annotated[bool, typer.Option(help="Also render the overview charts as PNG files.")] = True,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Write the benchmark report: index.html, a page per kernel and vega-bundle.js, the script they load offline."""
    from liger_warehouse.report.build import build_report  # Altair and vl-convert load only for this command

    con = open_reader(lake_of(warehouse, catalog, data))
    try:
        with console.status("building the report…"):
            built = build_report(con, out, png=png)
    finally:
        con.close()
    console.print(f"{built.html} ({built.charts} charts, snapshot {built.snapshot})")
    console.print(f"{len(built.kernel_pages)} kernel pages in {built.html.parent / KERNELS}")
    console.print(f"{built.script} (the script every page loads)")
    for path in built.pngs.values():
        console.print(str(path))
    if built.missing_views:
        missing = ", ".join(built.missing_views)
        console.print(f"[yellow]no {missing} view in this warehouse: those sections are empty[/yellow]")


@app.command()
def digest(
    run: Annotated[str | None, typer.Option(help="The run whose digest to print (default: the newest).")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="md or json.")] = "md",
    warehouse: WarehouseOpt = None,
) -> None:
    """Print the nightly digest: the regressions and improvements a refresh's new runs brought."""
    from liger_warehouse.alerts.digest import digest_key, stored_digests

    if format not in ("md", "json"):
        raise typer.BadParameter(f"{format!r}: expected md or json", param_hint="--format")
    storage = Storage(warehouse_root(warehouse))
    stored = stored_digests(storage)
    if not stored:
        raise CliError("this warehouse has no digest yet", "a refresh that brings a new gh-pages run writes one")
    run = run or stored[-1]
    if run not in stored:
        raise CliError(f"no digest of run {run!r}", f"the digests, oldest first: {', '.join(stored)}")
    typer.echo(storage.read_text(digest_key(run, format)), nl=False)
