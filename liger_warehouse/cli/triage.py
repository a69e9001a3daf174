"""Triage commands: ``ack``, ``annotate``, ``mute``, ``unmute`` and ``threshold``, the only
writers besides a refresh (docs/TRIAGE.md). Each checks what it names against the lake, appends
one event as the lake's next snapshot and says so in one line; or writes nothing and says why."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated

import typer

from liger_warehouse.cli.app import CatalogOpt, CliError, DataOpt, WarehouseOpt, app, console, lake_of, print_one_line

SeriesOpt = Annotated[str | None, typer.Option(help="A series: its digest, or a prefix of it (`series_digest`).")]
SweepOpt = Annotated[str | None, typer.Option(help="The sweep of this series (digest or prefix): all its workloads.")]
KernelOpt = Annotated[str | None, typer.Option(help="A kernel, every series of it (e.g. rms_norm).")]
NoteOpt = Annotated[str, typer.Option(help="Why: kept with the event and shown beside the verdicts.")]
ByOpt = Annotated[str | None, typer.Option("--by", help="Who writes it (default: the login name).")]


class AckKind(StrEnum):
    expected = "expected"
    infra = "infra"
    invalid = "invalid"
    fixed = "fixed"


def _write(warehouse: str | None, catalog: str | None, data: str | None, make: Callable, done: str) -> None:
    """Record what ``make`` checks and returns (``triage.events.record``); say what was written."""
    from liger_warehouse.build.publish import PublishConflict
    from liger_warehouse.lake.location import NoWarehouse
    from liger_warehouse.triage.events import TriageRejected, record

    try:
        event, snapshot = record(lake_of(warehouse, catalog, data), make)
    except NoWarehouse as exc:
        raise CliError(str(exc), "triage needs a published warehouse") from None
    except (TriageRejected, PublishConflict) as exc:
        print_one_line(f"{exc}; nothing was written" if isinstance(exc, TriageRejected) else str(exc))
        raise typer.Exit(1) from None
    console.print(f"{done} {event.target.shown} (snapshot {snapshot})", soft_wrap=True)


def _author(by: str | None) -> str:
    return (by or getpass.getuser()).strip() or "unknown"


@app.command()
def ack(
    run: Annotated[str, typer.Option(help="The run whose flag it is (a run name, 'latest', 'previous').")],
    kind: Annotated[AckKind, typer.Option(help="What the flag is: expected, infra, invalid or fixed.")],
    note: NoteOpt,
    series: SeriesOpt = None,
    sweep: SweepOpt = None,
    kernel: KernelOpt = None,
    by: ByOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Acknowledge the flags of a series, sweep or kernel at a run: no alert again, shown as acknowledged."""
    from liger_warehouse.triage import events

    def make(con) -> events.Event:
        target = events.resolve_target(con, series, sweep, kernel)
        at = events.resolve_run(con, run)
        return events.Event("ack", target, _author(by), note, kind=kind.value, first_run=at, last_run=at)

    _write(warehouse, catalog, data, make, f"acknowledged ({kind.value}) at run {run}:")


@app.command()
def annotate(
    note: NoteOpt,
    run: Annotated[str | None, typer.Option(help="A run the note is about.")] = None,
    commits: Annotated[str | None, typer.Option(help="A commit range A..B (or one commit) the note is about.")] = None,
    series: SeriesOpt = None,
    sweep: SweepOpt = None,
    kernel: KernelOpt = None,
    by: ByOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Annotate a run, a commit range, or a series, sweep or kernel (at a run or over its history)."""
    from liger_warehouse.triage import events

    def make(con) -> events.Event:
        if run and commits:
            raise events.TriageRejected("name --run or --commits, not both")
        first = last = events.resolve_run(con, run) if run else None
        if commits:
            first, last = events.resolve_commits(con, commits)
        if series or sweep or kernel:
            target = events.resolve_target(con, series, sweep, kernel)
        elif first:
            where = f"commits {commits}" if commits else f"run {first}"
            target = events.Target("run", None, f"every series at {where}")
        else:
            raise events.TriageRejected("name what the note is about: --run, --commits, --series, --sweep or --kernel")
        return events.Event("annotate", target, _author(by), note, first_run=first, last_run=last, commits=commits)

    _write(warehouse, catalog, data, make, "annotated")


@app.command()
def mute(
    series: SeriesOpt = None,
    sweep: SweepOpt = None,
    kernel: KernelOpt = None,
    note: Annotated[str | None, typer.Option(help="Why: kept with the event.")] = None,
    by: ByOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Keep a series, sweep or kernel out of alerts; it is still judged and stored."""
    _set_mute(True, (series, sweep, kernel), note, by, (warehouse, catalog, data))


@app.command()
def unmute(
    series: SeriesOpt = None,
    sweep: SweepOpt = None,
    kernel: KernelOpt = None,
    note: Annotated[str | None, typer.Option(help="Why: kept with the event.")] = None,
    by: ByOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Let a muted series, sweep or kernel alert again."""
    _set_mute(False, (series, sweep, kernel), note, by, (warehouse, catalog, data))


def _set_mute(
    muted: bool, named: tuple[str | None, str | None, str | None], note: str | None, by: str | None, where: tuple
) -> None:
    from liger_warehouse.triage import events

    def make(con) -> events.Event:
        target = events.resolve_target(con, *named)
        if events.is_muted(con, target) == muted:
            raise events.TriageRejected(f"{target.shown} is {'muted already' if muted else 'not muted'}")
        return events.Event("mute" if muted else "unmute", target, _author(by), note)

    _write(*where, make, "muted" if muted else "unmuted")


@app.command()
def threshold(
    value: Annotated[str, typer.Argument(help="A fraction (0.10), a percentage (10%) or 'default'.")],
    series: SeriesOpt = None,
    sweep: SweepOpt = None,
    kernel: KernelOpt = None,
    note: Annotated[str | None, typer.Option(help="Why: kept with the event.")] = None,
    by: ByOpt = None,
    warehouse: WarehouseOpt = None,
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Judge a series, sweep or kernel at a threshold of its own ('default': the query's again)."""
    from liger_warehouse.triage import events

    def make(con) -> events.Event:
        fraction = events.parse_threshold(value)
        target = events.resolve_target(con, series, sweep, kernel)
        return events.Event("threshold", target, _author(by), note, threshold=fraction)

    _write(warehouse, catalog, data, make, f"set the threshold to {value} for")
