"""Commands that change or describe the warehouse: ``refresh`` and ``status``."""

from __future__ import annotations

import os
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pipelines import settings
from pipelines.cli.app import WarehouseOpt, app, console, warehouse_root
from pipelines.store.generations import GenerationStore, RefreshBusy
from pipelines.store.storage import Storage

QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@app.command()
def refresh(
    warehouse: WarehouseOpt = None,
    upstream: Annotated[
        str | None,
        typer.Option(help="github:OWNER/REPO or a mirror directory (default $LIGER_WAREHOUSE_UPSTREAM)."),
    ] = None,
) -> None:
    """Pull every new upstream revision, publish the next generation and rebuild liger.duckdb.

    Runs the same Dagster job as the nightly schedule and records it in the instance at
    $DAGSTER_HOME (default ./.dagster_home).
    """
    root = warehouse_root(warehouse)
    if upstream:
        os.environ[settings.UPSTREAM] = upstream
    settings.ensure_dagster_home()
    import dagster as dg

    from pipelines.definitions import load

    gens = GenerationStore(Storage(root))
    try:
        lock = gens.try_lock("refresh")
    except RefreshBusy as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(3) from None
    started = time.monotonic()
    with lock, dg.DagsterInstance.get() as instance:
        job = load().resolve_job_def("refresh")
        with console.status("refreshing the warehouse…"):
            result = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET_LOGS)
    _print_refresh(gens, result, time.monotonic() - started)
    rejected = gens.current().summary.get("rejected", []) if result.success else []
    if not result.success or rejected:
        raise typer.Exit(1)


def _print_refresh(gens: GenerationStore, result, seconds: float) -> None:
    for event in result.all_events:
        if event.is_step_failure:
            console.print(f"[red]step {event.step_key} failed:[/red] {event.event_specific_data.error.message.strip()}")
    published = [e for e in result.get_asset_materialization_events() if e.asset_key.path == ["published_generation"]]
    if not published:
        state = "nothing new upstream" if result.success else "refresh failed; the published warehouse is unchanged"
        console.print(f"{state} ({seconds:.1f}s)")
        return
    summary = gens.current().summary
    table = Table(title=f"generation {gens.current_id()}")
    for column in ("revisions ingested", "results added", "restated", "removed", "time"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary["revisions_ingested"]),
        str(summary["results_added"]),
        str(summary["results_restated"]),
        str(summary["results_removed"]),
        f"{seconds:.1f}s",
    )
    console.print(table)
    for message in summary.get("rejected", []) + summary.get("deferred", []):
        console.print(f"[yellow]{message}[/yellow]")


@app.command()
def status(warehouse: WarehouseOpt = None) -> None:
    """Print the published generation, the last refresh and row counts."""
    gens = GenerationStore(Storage(warehouse_root(warehouse)))
    gen_id = gens.current_id()
    if gen_id is None:
        console.print("no generation published yet: run `liger-warehouse refresh`")
        raise typer.Exit(1)
    gen = gens.load(gen_id)
    table = Table(title=f"generation {gen.id} (published {gen.created_at})")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("parts", justify="right")
    for name, parts in gen.tables.items():
        table.add_row(name, str(sum(p.rows for p in parts)), str(len(parts)))
    Console().print(table)
