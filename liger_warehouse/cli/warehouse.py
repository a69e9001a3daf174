"""``refresh``: it launches the refresh job, which publishes the lake's next snapshot."""

from __future__ import annotations

import gc
import json
import logging
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import duckdb
import typer
from rich.markup import escape
from rich.table import Table

from liger_warehouse.cli.app import (
    DEBUG_HINT,
    OFFLINE_HINT,
    CatalogOpt,
    DataOpt,
    UpstreamOpt,
    WarehouseOpt,
    app,
    console,
    options,
    print_error,
    print_one_line,
    warehouse_root,
)
from liger_warehouse.cli.instance import dagster_instance
from liger_warehouse.lake.connect import latest_snapshot, read_lake
from liger_warehouse.lake.location import ALIAS, Lake, configured
from liger_warehouse.runtime import progress
from liger_warehouse.store.storage import Storage

if TYPE_CHECKING:
    import dagster as dg

    from liger_warehouse.upstream.open import UpstreamSettings

# Seconds the listing before a refresh waits for upstream before leaving it to the job.
PREFLIGHT_TIMEOUT = 5.0
# The asset whose materialization says which snapshot a run published (its "snapshot" metadata).
PUBLISHED_ASSET = "fact_result"
# Why a refresh committed nothing: another writer committed first, or the catalog stayed locked.
CONFLICT = "PublishConflict"


@app.command()
def refresh(
    warehouse: WarehouseOpt = None,
    upstream: UpstreamOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Pull every new upstream revision and publish it as the lake's next snapshot.

    Launches the same Dagster job as the nightly schedule, in this process, and records the run
    (tagged liger-warehouse/launched-by=cli) in the Dagster instance that `dg dev` and `dagster
    dev` show: $DAGSTER_HOME, else ./.dagster_home (see dagster.yaml). Shows progress bars for
    the stages, downloads and normalization, and every retry of an upstream request; then a
    summary: revisions ingested, results added, restated and removed, and the time taken, or
    one line when upstream had nothing new.

    When upstream lists exactly what the lake holds, and its views, macros and derived tables
    are current, no run is launched: the listing (conditional requests, as the job makes them)
    is recorded as a materialization of upstream_snapshots, so the asset's freshness still says
    when the warehouse last refreshed. The warehouse records the refresh too, for `status`.

    Exit status: 0 on success; 1 when the run failed, upstream served a file that was rejected,
    or another refresh committed to the lake first (nothing of this one is published then).
    """
    from liger_warehouse.store import last_refresh

    root = warehouse_root(warehouse)
    storage, lake = Storage(root), configured(root, catalog, data)
    started = time.monotonic()
    if (unchanged := _listing_as_published(lake, storage, upstream)) is not None:
        _record_listing(*unchanged, storage)
        last_refresh.record(storage, "nothing new", launched_by="cli")
        _say_nothing_new(lake, time.monotonic() - started)
        return
    result, warnings = _recorded_refresh(storage, upstream, {"catalog": catalog, "data": data})
    summary = _print_refresh(lake, result, warnings, time.monotonic() - started)
    if not result.success or summary.get("rejected"):
        raise typer.Exit(1)


def _recorded_refresh(
    storage: Storage, upstream: str | None, moved: dict[str, str | None]
) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """The refresh job, its start and outcome recorded in the warehouse for ``status``. A run that
    raises instead of failing (Ctrl-C, definitions that do not load) is recorded as canceled or
    failed before the error goes on."""
    from liger_warehouse.store import last_refresh

    run_id = str(uuid.uuid4())
    last_refresh.record(storage, "started", run_id=run_id, launched_by="cli")
    try:
        result, warnings = run_job("refresh", storage, upstream=upstream, run_id=run_id, **moved)
    except BaseException as exc:
        outcome = "canceled" if isinstance(exc, KeyboardInterrupt) else "failure"
        last_refresh.record(storage, outcome, run_id=run_id, launched_by="cli")
        raise
    last_refresh.record(storage, "success" if result.success else "failure", run_id=run_id, launched_by="cli")
    return result, warnings


def _listing_as_published(lake: Lake, storage: Storage, upstream: str | None) -> tuple[str, int] | None:
    """Upstream (as described) and how many revisions it lists, when it lists exactly what the
    lake holds and the lake's views, macros and derived tables were created from this code's
    ``sql/``: then the refresh job would publish nothing. None otherwise.

    The listing is tried once, with a short timeout: on any doubt (nothing published, a listing
    that fails) the job runs, and it retries and reports as usual.
    """
    from liger_warehouse.lake.objects import sql_current
    from liger_warehouse.runtime.warehouse_status import held_golden, read_revisions, upstream_as_published
    from liger_warehouse.upstream.open import open_upstream

    if not lake.exists():
        return None
    try:
        with read_lake(lake) as con:
            if not sql_current(con):
                return None
            revisions, golden = read_revisions(con), held_golden(con)
    except duckdb.Error:
        return None
    try:
        with _said_once():
            source = open_upstream(tried_once(upstream, PREFLIGHT_TIMEOUT), storage)
            listing = source.list()
    except Exception:
        return None
    if not upstream_as_published(revisions, golden, listing):
        return None
    return source.describe(), len(listing.revisions)


def tried_once(upstream: str | None, timeout: float) -> UpstreamSettings:
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


def _run_config(
    storage: Storage, ops: dict | None, upstream: str | None = None, catalog: str | None = None, data: str | None = None
) -> dict:
    """The warehouse root travels with the run, so the outputs run that the sensor starts after
    it writes to the same warehouse; so does its lake (``--catalog`` and ``--data``, else the
    settings) and ``--upstream``, when given. Dagster's console log is left to --debug: the
    progress bars and the summary say what happened, once. ``ops``: the ops' own config, if any."""
    # Resolved here, settings included: a run config replaces the resource's configured values.
    lake = configured(storage.url, catalog, data)
    resources = {"warehouse": {"config": {"root": storage.url, "catalog": lake.catalog, "data": lake.data}}}
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
    name: str,
    storage: Storage,
    ops: dict | None = None,
    upstream: str | None = None,
    run_id: str | None = None,
    catalog: str | None = None,
    data: str | None = None,
) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """Execute job ``name`` (``refresh``, ``imports``) in-process as run ``run_id`` (default a new
    one), on the warehouse at ``storage`` (its lake moved by ``catalog`` and ``data``, if given),
    with progress bars fed by its events; returns the result and the run's warnings, each once."""
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
                    run_config=_run_config(storage, ops, upstream, catalog, data),
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


def _print_refresh(lake: Lake, result, warnings: list[str], seconds: float) -> dict:
    """What the run did, in a table, a line, or the error; returns the summary of the snapshot it
    published (empty when it published none)."""
    if not result.success:
        _print_failure(result, seconds)
        return {}
    snapshot = _published_snapshot(result)
    summary = {} if snapshot is None else _snapshot_summary(lake, snapshot)
    if snapshot is None:
        _say_nothing_new(lake, seconds)
    else:
        console.print(_summary_table(snapshot, summary, seconds))
    for message in warnings:
        console.print(f"[yellow]{escape(message)}[/yellow]", soft_wrap=True)
    return summary


def _print_failure(result, seconds: float) -> None:
    failures = [e for e in result.all_events if e.is_step_failure]
    causes = [root_cause(e.event_specific_data.error) for e in failures]
    conflict = [why.removeprefix(f"{CONFLICT}: ") for cls, why in causes if cls == CONFLICT]
    if conflict:  # one line: the other refresh's snapshot is the lake's now, and nothing is to be done
        print_one_line(conflict[0])
        return
    what = "; ".join(f"step {e.step_key} failed: {why}" for e, (_, why) in zip(failures, causes, strict=True))
    offline = any(cls == "UpstreamUnreachable" for cls, _ in causes)
    unchanged = f"the published lake is unchanged ({seconds:.1f}s)"
    print_error(what or "the refresh run failed", OFFLINE_HINT if offline else f"{unchanged}; {DEBUG_HINT}")


def _published_snapshot(result) -> int | None:
    """The lake snapshot the run committed, from its materialization of ``PUBLISHED_ASSET``."""
    for event in result.get_asset_materialization_events():
        if event.asset_key.path == [PUBLISHED_ASSET] and "snapshot" in event.materialization.metadata:
            return int(event.materialization.metadata["snapshot"].value)
    return None


def _snapshot_summary(lake: Lake, snapshot: int) -> dict:
    """The refresh summary ``snapshot`` was committed with (its commit's extra info)."""
    with read_lake(lake) as con:
        row = con.execute(
            f"select commit_extra_info from ducklake_snapshots('{ALIAS}') where snapshot_id = ?", [snapshot]
        ).fetchone()
    return json.loads(row[0]) if row and row[0] else {}


def _say_nothing_new(lake: Lake, seconds: float) -> None:
    stays = f"snapshot {latest_snapshot(lake)} stays current" if lake.exists() else "nothing is published yet"
    console.print(f"nothing new upstream: {stays} ({seconds:.1f}s)", soft_wrap=True)


def _summary_table(snapshot: int, summary: dict, seconds: float) -> Table:
    table = Table(title=f"published snapshot {snapshot}")
    for column in ("revisions ingested", "results added", "restated", "removed", "time"):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.get("revisions_ingested", 0)),
        str(summary.get("results_added", 0)),
        str(summary.get("results_restated", 0)),
        str(summary.get("results_removed", 0)),
        f"{seconds:.1f}s",
    )
    return table
