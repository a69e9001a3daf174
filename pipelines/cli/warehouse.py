"""Commands that change or describe the warehouse: ``refresh`` and ``status``."""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from pipelines import settings
from pipelines.cli.app import WarehouseOpt, app, console, warehouse_root
from pipelines.store.generations import GenerationStore, RefreshBusy
from pipelines.store.storage import Storage
from pipelines.warehouse_status import behind, upstream_heads

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

    Runs the same Dagster job as the nightly schedule, in this process, and records the run in
    the instance at $DAGSTER_HOME (default ./.dagster_home), so it shows in `dagster dev`.
    Shows progress bars for the stages, downloads and normalization, then a summary: revisions
    ingested, results added, restated and removed, and the time taken.

    Exit status: 0 on success; 1 when the run failed or upstream served a file that was
    rejected; 3 when another refresh of the same warehouse is running.
    """
    root = warehouse_root(warehouse)
    if upstream:
        os.environ[settings.UPSTREAM] = upstream
    settings.ensure_dagster_home()
    gens = GenerationStore(Storage(root))
    try:
        lock = gens.try_lock("refresh")
    except RefreshBusy as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(3) from None
    started = time.monotonic()
    with lock:
        result = _run_refresh_job()
    _print_refresh(gens, result, time.monotonic() - started)
    rejected = gens.current().summary.get("rejected", []) if result.success else []
    if not result.success or rejected:
        raise typer.Exit(1)


def _run_refresh_job():
    """Execute the ``refresh`` job in-process, with progress bars fed by its events."""
    import dagster as dg

    from pipelines import progress
    from pipelines.cli.progress_view import RefreshProgress
    from pipelines.definitions import load

    with dg.DagsterInstance.get() as instance:
        job = load().resolve_job_def("refresh")
        run_id = str(uuid.uuid4())  # chosen here so the listener is in place before the run starts
        with RefreshProgress(console, stages=len(job.graph.nodes)) as shown:
            instance.add_event_listener(run_id, shown.on_event)
            with progress.listening(shown.on_progress):
                result = job.execute_in_process(
                    instance=instance, raise_on_error=False, run_config=QUIET_LOGS, run_id=run_id
                )
            shown.finish(result.success)
    return result


def _root_cause(error) -> str:
    """The innermost error: Dagster wraps ours in "Error occurred while executing op …"."""
    while error.cause is not None:
        error = error.cause
    return error.message.strip()


def _print_refresh(gens: GenerationStore, result, seconds: float) -> None:
    for event in result.all_events:
        if event.is_step_failure:
            console.print(f"[red]step {event.step_key} failed:[/red] {_root_cause(event.event_specific_data.error)}")
    published = [e for e in result.get_asset_materialization_events() if e.asset_key.path == ["published_generation"]]
    if not result.success:
        console.print(f"refresh failed; the published warehouse is unchanged ({seconds:.1f}s)")
        return
    summary = gens.current().summary if published else {}
    title = f"published generation {gens.current_id()}" if published else "nothing new upstream"
    table = Table(title=title)
    for column in ("revisions ingested", "results added", "restated", "removed", "time"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.get("revisions_ingested", 0)),
        str(summary.get("results_added", 0)),
        str(summary.get("results_restated", 0)),
        str(summary.get("results_removed", 0)),
        f"{seconds:.1f}s",
    )
    console.print(table)
    for message in summary.get("rejected", []) + summary.get("deferred", []):
        console.print(f"[yellow]{message}[/yellow]")


@app.command()
def status(
    warehouse: WarehouseOpt = None,
    check_upstream: Annotated[
        bool,
        typer.Option(
            "--check-upstream",
            help="Also list upstream now and count the revisions it has that the warehouse lacks "
            "(reads $LIGER_WAREHOUSE_UPSTREAM and friends; network access for github:).",
        ),
    ] = False,
) -> None:
    """Print the published generation, the last refresh, row counts and the upstream head.

    The last refresh comes from the Dagster instance at $DAGSTER_HOME (default ./.dagster_home);
    the upstream head is the newest revision per source that the published generation holds.
    Exit status 1 when nothing has been published yet.
    """
    storage = Storage(warehouse_root(warehouse))
    gens = GenerationStore(storage)
    gen_id = gens.current_id()
    if gen_id is None:
        console.print("no generation published yet: run `liger-warehouse refresh`")
        raise typer.Exit(1)
    gen = gens.load(gen_id)
    out = Console()
    out.print(f"published generation [bold]{gen.id}[/bold] (created {gen.created_at})")
    out.print(f"last refresh: {_last_refresh()}")
    out.print(_row_counts(gen))
    revisions = gens.read_table(gen, "dim_upstream_revision")
    out.print(_heads_table(revisions, _upstream_behind(storage, revisions) if check_upstream else None))


def _row_counts(gen) -> Table:
    table = Table(title="row counts")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("parts", justify="right")
    for name, parts in gen.tables.items():
        table.add_row(name, f"{sum(p.rows for p in parts):,}", str(len(parts)))
    return table


def _heads_table(revisions, behind: dict | None) -> Table:
    table = Table(title="upstream head (newest revision held per source)")
    for column in ("source", "file", "revision", "committed at", "held"):
        table.add_column(column, justify="right" if column == "held" else "left")
    if behind is not None:
        table.add_column("new upstream", justify="right")
    for head in upstream_heads(revisions):
        cells = [head.source, head.name, head.revision, head.committed_at, str(head.revisions)]
        if behind is not None:
            cells.append(str(behind.get((head.source, head.name), 0)))
        table.add_row(*cells)
    return table


def _last_refresh() -> str:
    """The newest run of the ``refresh`` job in the Dagster instance, if there is one."""
    home = Path(os.getenv("DAGSTER_HOME") or settings.DEFAULT_DAGSTER_HOME)
    if not home.is_dir():
        return f"unknown (no Dagster instance at {home})"
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home.resolve())
    with dg.DagsterInstance.get() as instance:
        records = instance.get_run_records(dg.RunsFilter(job_name="refresh"), limit=1)
    if not records:
        return f"none recorded in {home}"
    record = records[0]
    when = record.end_time or record.start_time or record.create_timestamp.timestamp()
    stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp}, {record.dagster_run.status.value.lower()} (run {record.dagster_run.run_id[:8]})"


def _upstream_behind(storage: Storage, revisions) -> dict:
    """Ask upstream now; an unreachable upstream is reported, not fatal."""
    from pipelines.upstream.http import UpstreamError
    from pipelines.upstream.open import open_upstream, settings_from_env

    with tempfile.TemporaryDirectory() as scratch:
        # ETags go to scratch space: status never writes to the warehouse.
        try:
            listing = open_upstream(settings_from_env(), Storage(scratch)).list()
        except UpstreamError as exc:
            console.print(f"[yellow]could not list upstream: {exc}[/yellow]")
            return {}
    return behind(revisions, listing)
