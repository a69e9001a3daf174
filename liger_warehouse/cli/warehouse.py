"""Commands that change or describe the warehouse: ``refresh`` and ``status``."""

from __future__ import annotations

import gc
import logging
import re
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from liger_warehouse.cli.app import (
    DEBUG_HINT,
    OFFLINE_HINT,
    UpstreamOpt,
    WarehouseOpt,
    app,
    console,
    options,
    print_error,
    warehouse_root,
)
from liger_warehouse.cli.instance import dagster_instance
from liger_warehouse.cli.output import stdout_console
from liger_warehouse.runtime import progress
from liger_warehouse.store.storage import Storage

if TYPE_CHECKING:
    import dagster as dg

    from liger_warehouse.store.generations import GenerationStore
    from liger_warehouse.upstream.open import UpstreamSettings
    from liger_warehouse.upstream.sources import Upstream

# Seconds the listing before a refresh waits for upstream before leaving it to the job.
PREFLIGHT_TIMEOUT = 5.0
# Seconds `status --check-upstream` waits for each request: offline, status ends within 5 s.
CHECK_TIMEOUT = 3.0


@app.command()
def refresh(warehouse: WarehouseOpt = None, upstream: UpstreamOpt = None) -> None:
    """Pull every new upstream revision, publish the next generation and rebuild liger.duckdb.

    Runs the same Dagster job as the nightly schedule, in this process, and records the run
    (tagged liger-warehouse/launched-by=cli) in the Dagster instance that `dg dev` and `dagster
    dev` show: $DAGSTER_HOME, else ./.dagster_home (see dagster.yaml). Shows progress bars for
    the stages, downloads and normalization, and every retry of an upstream request; then a
    summary: revisions ingested, results added, restated and removed, and the time taken, or
    one line when upstream had nothing new.

    When upstream lists exactly what the published generation holds, and its views, schema and
    derived tables are current, no run is launched: the listing (conditional requests, as the job makes them)
    is recorded as a materialization of upstream_snapshots, so the asset's freshness still says
    when the warehouse last refreshed. The warehouse records the refresh too, for `status`.

    Exit status: 0 on success; 1 when the run failed or upstream served a file that was
    rejected; 3 when another refresh of the same warehouse is running.
    """
    from liger_warehouse.store import last_refresh
    from liger_warehouse.store.generations import GenerationStore, RefreshBusy

    root = warehouse_root(warehouse)
    gens = GenerationStore(Storage(root))
    try:
        lock = gens.try_lock("refresh")
    except RefreshBusy as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(3) from None
    started = time.monotonic()
    with lock:
        if (unchanged := _listing_as_published(gens, upstream)) is not None:
            _record_listing(*unchanged, gens.storage)
            last_refresh.record(gens.storage, "nothing new", launched_by="cli")
            _say_nothing_new(gens, time.monotonic() - started)
            return
        result, warnings = _recorded_refresh(gens.storage, upstream)
    _print_refresh(gens, result, warnings, time.monotonic() - started)
    rejected = gens.current().summary.get("rejected", []) if result.success else []
    if not result.success or rejected:
        raise typer.Exit(1)


def _recorded_refresh(storage: Storage, upstream: str | None) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """The refresh job, its start and outcome recorded in the warehouse for ``status``. A run that
    raises instead of failing (Ctrl-C, definitions that do not load) is recorded as canceled or
    failed before the error goes on."""
    from liger_warehouse.store import last_refresh

    run_id = str(uuid.uuid4())
    last_refresh.record(storage, "started", run_id=run_id, launched_by="cli")
    try:
        result, warnings = run_job("refresh", storage, upstream=upstream, run_id=run_id)
    except BaseException as exc:
        outcome = "canceled" if isinstance(exc, KeyboardInterrupt) else "failure"
        last_refresh.record(storage, outcome, run_id=run_id, launched_by="cli")
        raise
    last_refresh.record(storage, "success" if result.success else "failure", run_id=run_id, launched_by="cli")
    return result, warnings


def _listing_as_published(gens: GenerationStore, upstream: str | None) -> tuple[str, int] | None:
    """Upstream (as described) and how many revisions it lists, when it lists exactly what the
    published generation holds and its views, schema and derived tables (``sql/``) are current:
    then the refresh job would skip every step after its listing. None otherwise.

    The listing is tried once, with a short timeout: on any doubt (nothing published, a listing
    that fails) the job runs, and it retries and reports as usual.
    """
    from liger_warehouse.analysis.part_inputs import derived_current
    from liger_warehouse.model.tables import SCHEMA_VERSION
    from liger_warehouse.runtime.warehouse_status import upstream_as_published
    from liger_warehouse.serve.database import database_path, views_current
    from liger_warehouse.upstream.open import open_upstream

    current = gens.current_id()
    if current is None or not views_current(gens.storage, database_path(gens.storage), current):
        return None
    gen = gens.load(current)
    if gen.schema_version != SCHEMA_VERSION or not derived_current(gen):
        return None
    try:
        with _said_once():
            source = open_upstream(_tried_once(upstream, PREFLIGHT_TIMEOUT), gens.storage)
            listing = source.list()
    except Exception:
        return None
    revisions = gens.read_table(gen, "dim_upstream_revision", ["revision_digest", "is_upstream"])
    if not upstream_as_published(revisions, gens.read_table(gen, "golden_commit", ["content_digest"]), listing):
        return None
    return source.describe(), len(listing.revisions)


def _tried_once(upstream: str | None, timeout: float) -> UpstreamSettings:
    """The upstream settings with one attempt per request, each waiting at most ``timeout``
    seconds: for a listing that only informs (the refresh's preflight, ``status``), where a
    retry would be a wait the user sees and the refresh's own listing retries anyway."""
    from dataclasses import replace

    from liger_warehouse.upstream.open import settings_from_env

    settings = settings_from_env(upstream)
    policy = replace(settings.policy, max_attempts=1, timeout=min(settings.policy.timeout, timeout))
    return replace(settings, policy=policy)


def _record_listing(upstream: str, listed: int, storage: Storage) -> None:
    """A materialization of upstream_snapshots without a run: the listing that found nothing new."""
    import dagster as dg

    from pipelines.defs.schedules import LAUNCHED_BY

    event = dg.AssetMaterialization(
        "upstream_snapshots",
        description="refresh found nothing new upstream; no run was needed",
        metadata={"upstream": upstream, "warehouse": storage.url, "revisions_listed": listed},
        tags={LAUNCHED_BY: "cli"},
    )
    with dagster_instance() as instance:
        instance.report_runless_asset_event(event)


def _run_config(storage: Storage, ops: dict | None, upstream: str | None = None) -> dict:
    """The warehouse root travels with the run, so the outputs run that the sensor starts after
    it writes to the same warehouse; so does ``--upstream``, when given. Dagster's console log
    is left to --debug: the progress bars and the summary say what happened, once. ``ops``: the
    ops' own config, if any."""
    resources = {"warehouse": {"config": {"root": storage.url}}}
    if upstream:
        resources["upstream"] = {"config": {"upstream": upstream}}
    level = "DEBUG" if options.debug else "CRITICAL"
    return {
        "loggers": {"console": {"config": {"log_level": level}}},
        "resources": resources,
        **({"ops": ops} if ops else {}),
    }


@contextmanager
def _said_once() -> Iterator[None]:
    """The project's own Python warnings repeat what the CLI shows: a retry (its notice), a
    deferred download or a rejected file (the run's warnings). Without --debug, each is said once."""
    quiet = logging.NullHandler()
    logger = logging.getLogger("liger_warehouse")
    if not options.debug:
        logger.addHandler(quiet)
    try:
        yield
    finally:
        logger.removeHandler(quiet)


def run_job(
    name: str, storage: Storage, ops: dict | None = None, upstream: str | None = None, run_id: str | None = None
) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """Execute job ``name`` (``refresh``, ``imports``) in-process as run ``run_id`` (default a new
    one), with progress bars fed by its events; returns the result and the run's warnings, each
    once."""
    from liger_warehouse.cli.progress_view import RefreshProgress
    from pipelines.definitions import load
    from pipelines.defs.schedules import LAUNCHED_BY

    with dagster_instance() as instance:
        job = load().resolve_job_def(name)
        if options.owns_process:
            # Dagster, its instance and the definitions live until the process ends: frozen, the
            # run's full collections no longer scan them (cli.main).
            gc.freeze()
        run_id = run_id or str(uuid.uuid4())  # known before the run starts: the listener is in place first
        with RefreshProgress(console, stages=len(job.graph.nodes)) as shown:
            instance.add_event_listener(run_id, shown.on_event)
            with progress.listening(shown.on_progress, shown.on_notice), _said_once():
                result = job.execute_in_process(
                    instance=instance,
                    raise_on_error=False,
                    run_config=_run_config(storage, ops, upstream),
                    run_id=run_id,
                    tags={LAUNCHED_BY: "cli"},
                )
            shown.finish(result.success)
    return result, shown.warnings


def root_cause(error) -> tuple[str, str]:
    """The innermost error (Dagster wraps ours in "Error occurred while executing op …") as its
    class name and the first line of its message, without the module path."""
    while error.cause is not None:
        error = error.cause
    message = re.sub(r"^[\w.]+\.(\w+): ", r"\1: ", error.message.strip())
    return error.cls_name, message.splitlines()[0] if message else error.cls_name


def _print_refresh(gens: GenerationStore, result, warnings: list[str], seconds: float) -> None:
    if not result.success:
        failures = [e for e in result.all_events if e.is_step_failure]
        causes = [root_cause(e.event_specific_data.error) for e in failures]
        what = "; ".join(f"step {e.step_key} failed: {why}" for e, (_, why) in zip(failures, causes, strict=True))
        offline = any(cls == "UpstreamUnreachable" for cls, _ in causes)
        unchanged = f"the published warehouse is unchanged ({seconds:.1f}s)"
        print_error(what or "the refresh run failed", OFFLINE_HINT if offline else f"{unchanged}; {DEBUG_HINT}")
        return
    published = [e for e in result.get_asset_materialization_events() if e.asset_key.path == ["published_generation"]]
    if published:
        console.print(_summary_table(gens, seconds))
    else:
        _say_nothing_new(gens, seconds)
    for message in warnings:
        console.print(f"[yellow]{escape(message)}[/yellow]", soft_wrap=True)


def _say_nothing_new(gens: GenerationStore, seconds: float) -> None:
    current = gens.current_id()
    stays = f"generation {current} stays current" if current else "nothing is published yet"
    console.print(f"nothing new upstream: {stays} ({seconds:.1f}s)", soft_wrap=True)


def _summary_table(gens: GenerationStore, seconds: float) -> Table:
    summary = gens.current().summary
    table = Table(title=f"published generation {gens.current_id()}")
    for column in ("revisions ingested", "results added", "restated", "removed", "time"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.get("revisions_ingested", 0)),
        str(summary.get("results_added", 0)),
        str(summary.get("results_restated", 0)),
        str(summary.get("results_removed", 0)),
        f"{seconds:.1f}s",
    )
    if summary.get("rederived"):
        table.caption = (
            "the derived tables and views were derived again: how they are derived (sql/, or a fix) "
            "changed since the last publish"
        )
    return table


@app.command()
def status(
    warehouse: WarehouseOpt = None,
    check_upstream: Annotated[
        bool,
        typer.Option(
            "--check-upstream",
            help="Also list upstream now and count the revisions it has that the warehouse lacks "
            "(reads --upstream or $LIGER_WAREHOUSE_UPSTREAM and friends; network access for github:).",
        ),
    ] = False,
    upstream: UpstreamOpt = None,
) -> None:
    """Print the published generation, the last refresh, row counts and the upstream head.

    The last refresh is the one the warehouse recorded (state/last-refresh.json): the CLI records
    the refreshes it runs, the daemon's sensors those launched by the schedule or the UI. The
    upstream head is the newest revision per source that the published generation holds.
    --check-upstream tries each upstream request once, for at most a few seconds: an upstream
    that does not answer gets the warehouse's own state and then one line saying what was tried.
    Exit status 1 when nothing has been published yet, or when --check-upstream cannot list
    upstream. Reads the warehouse only: no Dagster.
    """
    from liger_warehouse.store.generations import GenerationStore
    from liger_warehouse.upstream.open import open_upstream

    storage = Storage(warehouse_root(warehouse))
    gens = GenerationStore(storage)
    gen_id = gens.current_id()
    if gen_id is None:
        console.print("no generation published yet: run `liger-warehouse refresh`")
        raise typer.Exit(1)
    gen = gens.load(gen_id)
    revisions = gens.read_table(gen, "dim_upstream_revision")
    out = stdout_console()  # a pipe gets whole lines too
    with ExitStack() as scratch:
        source = None
        if check_upstream:  # a bad --upstream is said before anything else; a silent upstream, after the state
            etags = scratch.enter_context(tempfile.TemporaryDirectory())  # status never writes to the warehouse
            source = open_upstream(_tried_once(upstream, CHECK_TIMEOUT), Storage(etags))
        out.print(f"published generation [bold]{gen.id}[/bold] (created {gen.created_at})")
        out.print(f"last refresh: {_last_refresh(storage)}")
        out.print(_row_counts(gen))
        ahead, failure = (None, None) if source is None else _upstream_ahead(revisions, source)
    out.print(_heads_table(revisions, ahead))
    if failure is not None:
        console.print(f"[red]error:[/red] {escape(failure)}", soft_wrap=True)
        raise typer.Exit(1)


def _row_counts(gen) -> Table:
    table = Table(title="row counts")
    table.add_column("table")
    table.add_column("rows", justify="right")
    table.add_column("parts", justify="right")
    for name, parts in gen.tables.items():
        table.add_row(name, f"{sum(p.rows for p in parts):,}", str(len(parts)))
    return table


def _heads_table(revisions, behind: dict | None) -> Table:
    from liger_warehouse.runtime.warehouse_status import upstream_heads

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


def _last_refresh(storage: Storage) -> str:
    from liger_warehouse.store import last_refresh

    try:
        entry = last_refresh.last(storage)
    except ValueError as exc:
        return f"unknown: {exc}"
    return entry.describe() if entry else "none recorded in this warehouse"


def _upstream_ahead(revisions, source: Upstream) -> tuple[dict | None, str | None]:
    """How many revisions ``source`` lists now that the warehouse lacks, per source; or, when it
    cannot be listed, None and one line saying what was tried, instead of counting nothing."""
    from liger_warehouse.runtime.warehouse_status import behind
    from liger_warehouse.upstream.http import UpstreamError, UpstreamUnreachable

    try:
        listing = source.list()
    except UpstreamError as exc:
        why = "upstream unreachable" if isinstance(exc, UpstreamUnreachable) else "upstream could not be listed"
        return None, f"{why}, so nothing new is counted: {exc}"
    return behind(revisions, listing), None
