"""Commands that move data in and out: ``export kernelindex``, ``export liger-csv``, ``import kernelindex``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from pipelines.cli.app import WarehouseOpt, app, console, warehouse_root
from pipelines.database import build_database, database_path, publish_database
from pipelines.export import liger_csv
from pipelines.export.records import ResultFilter, UnsafeWhere, connect
from pipelines.export.writer import InvalidRecord, atomic_output, write_records
from pipelines.import_kernelindex import ImportOutcome, ImportRejected, import_kernelindex
from pipelines.store.generations import Generation, GenerationStore, PublishConflict, RefreshBusy
from pipelines.store.raw import RawStore
from pipelines.store.storage import Storage

export_app = typer.Typer(help="Write warehouse data in other formats.", no_args_is_help=True)
import_app = typer.Typer(help="Add records from other sources to the warehouse.", no_args_is_help=True)
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")

Many = Annotated[list[str] | None, typer.Option(help="Repeat to take several.")]


def _published(warehouse: str | None) -> tuple[GenerationStore, Generation]:
    gens = GenerationStore(Storage(warehouse_root(warehouse)))
    if gens.current_id() is None:
        console.print("no generation published yet: run `liger-warehouse refresh` first")
        raise typer.Exit(1)
    return gens, gens.current()


@export_app.command("kernelindex")
def export_kernelindex(
    out: Annotated[Path, typer.Option(help="Directory to write kernelindex-<generation>[-<subset>].ndjson into.")],
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
    warehouse: WarehouseOpt = None,
) -> None:
    """One kernelindex.dev/v1alpha1 record per result of the published generation, as NDJSON."""
    gens, gen = _published(warehouse)
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
    name = f"kernelindex-{gen.id}" + ("" if filt.is_everything() else f"-{filt.key()}") + ".ndjson"
    con = connect(gens, gen)
    try:
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
) -> None:
    """An upstream file exactly as upstream held it at a revision, rebuilt from the tables."""
    if (path is None) == (run is None) or (run is not None and as_of is not None):
        console.print("give --path (optionally with --as-of) or --run")
        raise typer.Exit(2)
    gens, gen = _published(warehouse)
    con = connect(gens, gen)
    try:
        revision = liger_csv.find_run(con, run) if run else liger_csv.find_revision(con, path, as_of)
        data = liger_csv.rebuild(con, revision)
    except (liger_csv.RevisionNotFound, liger_csv.RebuildMismatch) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    finally:
        con.close()
    if str(out) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        with atomic_output(Storage(out.parent), out.name) as stream:
            stream.write(data)
    when = f", committed {revision.committed_at:%Y-%m-%d %H:%M:%S}Z" if revision.committed_at else ""
    console.print(f"{revision.label}{when}: {revision.row_count} rows, {len(data)} bytes, {revision.content_digest}")


@import_app.command("kernelindex")
def import_kernelindex_file(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="NDJSON of kernelindex records.")],
    name: Annotated[str | None, typer.Option(help="Source name: import:<name>. Default: the file's stem.")] = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Add the records of FILE as source import:<name>; invalid records are quarantined."""
    storage = Storage(warehouse_root(warehouse))
    gens = GenerationStore(storage)
    try:
        outcome = import_kernelindex(gens, RawStore(storage), file.read_bytes(), name or file.stem)
    except RefreshBusy as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(3) from None
    except (ValueError, ImportRejected, PublishConflict) as exc:  # FileRejected is a ValueError, as is a bad name
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None
    if not outcome.already_imported:
        gen = gens.current()
        path = database_path(storage)
        build_database(gens, gen, path)
        publish_database(storage, path)
    _print_import(outcome)


def _print_import(outcome: ImportOutcome) -> None:
    if outcome.already_imported:
        console.print(f"{outcome.source_key}: this file is already imported; nothing changed")
        return
    console.print(
        f"{outcome.source_key}: {outcome.records} records, {outcome.results_added} new results, "
        f"{outcome.quarantined} quarantined; generation {outcome.generation}"
    )
    for reason in outcome.reasons[:10]:
        console.print(f"[yellow]quarantined {reason}[/yellow]")
