"""Commands that move data in and out: ``export kernelindex``, ``export liger-csv``, ``import kernelindex``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from liger_warehouse.cli.app import (
    DEBUG_HINT,
    CatalogOpt,
    DataOpt,
    WarehouseOpt,
    app,
    console,
    lake_of,
    open_reader,
    print_error,
    warehouse_root,
)
from liger_warehouse.cli.warehouse import root_cause, run_job
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.storage import Storage

export_app = typer.Typer(help="Write warehouse data in other formats.", no_args_is_help=True)
import_app = typer.Typer(help="Add records from other sources to the warehouse.", no_args_is_help=True)
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")

Many = Annotated[list[str] | None, typer.Option(help="Repeat to take several.")]
AsOfOpt = Annotated[
    str | None, typer.Option("--as-of", help="Read an earlier lake snapshot: its id, or a timestamp. Default: newest.")
]


def _reader(lake: Lake, as_of: str | None = None) -> duckdb.DuckDBPyConnection:
    """The export reader of ``lake`` at ``as_of`` (``export.records.connect``), or a clear exit
    when nothing is published there or it holds no such snapshot."""
    from liger_warehouse.export.records import with_results_view

    return with_results_view(open_reader(lake, as_of))


@export_app.command("kernelindex")
def export_kernelindex(
    out: Annotated[Path, typer.Option(help="Directory to write kernelindex-<snapshot>[-<subset>].ndjson into.")],
    kernel: Many = None,
    gpu: Annotated[list[str] | None, typer.Option(help="Raw gpu_name or its slug (nvidia-h100-80gb-hbm3).")] = None,
    provider: Many = None,
    version: Annotated[list[str] | None, typer.Option(help="Liger version (0.6.4).")] = None,
    metric: Annotated[list[str] | None, typer.Option(help="speed or memory.")] = None,
    source: Annotated[list[str] | None, typer.Option(help="main, gh-pages or import.")] = None,
    current_only: Annotated[bool, typer.Option("--current-only", help="Only results upstream shows today.")] = False,
    where: Annotated[
        str | None,
        typer.Option(help="Trusted SQL condition on the kernelindex_results view (docs/EXPORTS.md)."),
    ] = None,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """One kernelindex.dev/v1alpha1 record per result of a lake snapshot (the newest), as NDJSON."""
    from liger_warehouse.export.records import ResultFilter, UnsafeWhere
    from liger_warehouse.export.writer import InvalidRecord, atomic_output, write_records
    from liger_warehouse.lake.connect import snapshot_of

    filt = ResultFilter(
        kernels=tuple(kernel or ()),
        gpus=tuple(gpu or ()),
        providers=tuple(provider or ()),
        versions=tuple(version or ()),
        metrics=tuple(metric or ()),
        sources=tuple(source or ()),
        current_only=current_only,
        where=where,
    )
    con = _reader(lake_of(warehouse, catalog, data), as_of)
    try:
        # Named by the snapshot read, so two exports of different states never share a name.
        name = f"kernelindex-{snapshot_of(con)}" + ("" if filt.is_everything() else f"-{filt.key()}") + ".ndjson"
        with atomic_output(Storage(out), name) as stream:
            stats = write_records(con, filt, stream)
    except (UnsafeWhere, InvalidRecord, duckdb.Error) as exc:  # duckdb.Error: a --where that fails
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    finally:
        con.close()
    console.print(
        f"{stats.records} records ({stats.validated} validated) -> {out / name} "
        f"in {stats.seconds:.1f}s ({stats.records_per_second:,.0f} records/s)"
    )


@export_app.command("liger-csv")
def export_liger_csv(
    out: Annotated[Path, typer.Option(help="File to write; - for standard output.")],
    path: Annotated[str | None, typer.Option(help="Upstream path, e.g. benchmark/data/all_benchmark_data.csv.")] = None,
    run: Annotated[str | None, typer.Option(help="A gh-pages run, e.g. 0a62700-v0.6.4.")] = None,
    as_of: Annotated[
        str | None,
        typer.Option(help="With --path: a commit sha or unique prefix, or an ISO date/date-time. Default: newest."),
    ] = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """An upstream file exactly as upstream held it at a revision, rebuilt from the tables."""
    from liger_warehouse.export import liger_csv
    from liger_warehouse.export.writer import atomic_output

    if (path is None) == (run is None) or (run is not None and as_of is not None):
        console.print("give --path (optionally with --as-of) or --run")
        raise typer.Exit(2)
    # The newest snapshot holds every revision any earlier one did: revisions are never deleted.
    con = _reader(lake_of(warehouse, catalog, data))
    try:
        revision = liger_csv.find_run(con, run) if run else liger_csv.find_revision(con, path, as_of)
        content = liger_csv.rebuild(con, revision)
    except (liger_csv.RevisionNotFound, liger_csv.RebuildMismatch) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    finally:
        con.close()
    if str(out) == "-":
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        with atomic_output(Storage(out.parent), out.name) as stream:
            stream.write(content)
    when = f", committed {revision.committed_at:%Y-%m-%d %H:%M:%S}Z" if revision.committed_at else ""
    console.print(f"{revision.label}{when}: {revision.row_count} rows, {len(content)} bytes, {revision.content_digest}")


@import_app.command("kernelindex")
def import_kernelindex_file(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="NDJSON of kernelindex records.")],
    name: Annotated[str | None, typer.Option(help="Source name: import:<name>. Default: the file's stem.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what the import would change; write nothing.")
    ] = False,
    warehouse: WarehouseOpt = None,
) -> None:
    """Add the records of FILE as source import:<name>; invalid records are quarantined.

    Runs the `imports` Dagster job in this process (one transaction: ingest, derived tables,
    the blocking checks) and records it in the instance at $DAGSTER_HOME. A file without one valid record publishes
    nothing. The same file again changes nothing, unless import:<name> was withdrawn: then it
    is current again.

    Exit status: 0 when imported or nothing to do; 1 when the file is refused or the run
    failed; 3 when another refresh or import of the warehouse committed first.
    """
    name = name or file.stem
    root = warehouse_root(warehouse)
    data = file.read_bytes()
    if dry_run:
        _dry_run(root, data, name)
    elif not _nothing_to_do(lake_of(root), name, data):
        _run_imports_job(root, {"name": name, "file": str(file.resolve())})


@import_app.command("withdraw")
def withdraw_import(
    name: Annotated[str, typer.Argument(help="The source name: import:<name>.")],
    warehouse: WarehouseOpt = None,
) -> None:
    """Withdraw source import:<name>: its results stop being current and stay as history.

    Publishes a snapshot in which no revision of the source is head (`restatements` shows its
    results as 'withdrawn'); nothing is deleted. Importing a file under the same name again
    makes the source current again. Runs the `imports` Dagster job like `import kernelindex`.
    """
    root = warehouse_root(warehouse)
    if not _nothing_to_do(lake_of(root), name, None):
        _run_imports_job(root, {"name": name, "withdraw": True})


def _say(text: str, style: str | None = None) -> None:
    # Source keys and reasons are data: "import:three:" is not an emoji, "[x]" not markup.
    console.print(text, style=style, markup=False, emoji=False, highlight=False, soft_wrap=True)


def _nothing_to_do(lake: Lake, name: str, data: bytes | None) -> bool:
    """Say so, and skip the run, when the import (or withdrawal) would change nothing."""
    from liger_warehouse.imports.kernelindex import source_key, unchanged_by

    try:
        reason = unchanged_by(lake, name, data)
    except ValueError as exc:  # a bad name, or no import of that name to withdraw
        print_error(str(exc), "nothing changed")
        raise typer.Exit(1) from None
    if reason:
        _say(f"{source_key(name)}: {reason}; nothing changed")
    return bool(reason)


def _run_imports_job(root: str, config: dict) -> None:
    """Run the ``imports`` job; exit 1 with one line when it fails, another writer's commit first
    among the causes."""
    result, _ = run_job("imports", Storage(root), {"kernelindex_import": {"config": config}})
    if not result.success:
        _, message = _failure(result)
        print_error(message, f"the published lake is unchanged; {DEBUG_HINT}")
        raise typer.Exit(1)
    _print_outcome(result, withdrawn=config.get("withdraw", False))


def _failure(result) -> tuple[str, str]:
    """The class and message of what failed the run: a blocking audit, or a step's error."""
    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed:
            examples = evaluation.metadata.get("examples")
            detail = examples.value.splitlines()[0].removeprefix("- ") if examples else ""
            return "", f"audit {evaluation.asset_check_key.to_user_string()} failed: {detail}"
    failures = [e for e in result.all_events if e.is_step_failure]
    return root_cause(failures[0].event_specific_data.error) if failures else ("", "the imports run failed")


def _print_outcome(result, withdrawn: bool) -> None:
    """What the run did, from the metadata of its kernelindex_import event."""
    node = "kernelindex_import"
    events = [*result.asset_materializations_for_node(node), *result.asset_observations_for_node(node)]
    (event,) = [e for e in events if e.asset_key.path == [node]]
    meta = {key: value.value for key, value in event.metadata.items()}
    key = meta["source_key"]
    if meta["unchanged"]:
        _say(f"{key}: {meta['unchanged']}; nothing changed")
    elif withdrawn:
        _say(
            f"{key} withdrawn: {meta['results_withdrawn']} results no longer current; "
            f"published snapshot {meta['snapshot']}"
        )
    else:
        again = " (withdrawn before: current again)" if meta["reinstated"] else ""
        _say(
            f"{key}: {meta['records']} records, {meta['results_added']} new results, "
            f"{meta['quarantined']} quarantined{again}; published snapshot {meta['snapshot']}"
        )
        _print_reasons(meta["quarantined_lines"], meta["quarantined"])


def _print_reasons(reasons: list[str], total: int) -> None:
    for reason in reasons[:10]:
        _say(f"quarantined {reason}", "yellow")
    if total > 10:
        _say(f"… and {total - 10} more quarantined lines", "yellow")


def _dry_run(root: str, data: bytes, name: str) -> None:
    """What the import would change, worked out like the import itself, writing nothing."""
    from liger_warehouse.imports.kernelindex import ImportRejected, preview_import
    from liger_warehouse.store.raw import RawStore

    try:
        outcome = preview_import(lake_of(root), RawStore(Storage(root)), data, name)
    except (ValueError, ImportRejected) as exc:  # FileRejected is a ValueError, as is a bad name
        print_error(str(exc), "dry run: the import would publish nothing; nothing was written")
        raise typer.Exit(1) from None
    if outcome.unchanged:
        _say(f"{outcome.source_key}: {outcome.unchanged}; the import would change nothing")
        return
    again = " (withdrawn now: it would be current again)" if outcome.reinstated else ""
    _say(
        f"dry run, nothing written: {outcome.source_key} would get {outcome.records} records, "
        f"{outcome.results_added} new results, {outcome.quarantined} quarantined{again}"
    )
    _print_reasons(outcome.reasons, outcome.quarantined)
    for table, digests in outcome.new_digests.items():
        shown = ", ".join(digests[:5]) + (f", … ({len(digests) - 5} more)" if len(digests) > 5 else "")
        _say(f"would add {len(digests)} {table}: {shown}")
