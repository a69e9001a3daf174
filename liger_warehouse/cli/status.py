"""``status``: the lake's snapshots, the last refresh, row counts and the upstream head."""

from __future__ import annotations

import json
import tempfile
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated

import duckdb
import typer
from rich.markup import escape
from rich.table import Table

from liger_warehouse.cli.app import CatalogOpt, DataOpt, UpstreamOpt, WarehouseOpt, app, console, warehouse_root
from liger_warehouse.cli.output import stdout_console
from liger_warehouse.cli.warehouse import tried_once
from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import ALIAS, Lake, NoWarehouse, configured
from liger_warehouse.store.storage import Storage

if TYPE_CHECKING:
    from liger_warehouse.upstream.sources import Upstream

# Seconds `status --check-upstream` waits for each request: offline, status ends within 5 s.
CHECK_TIMEOUT = 3.0
# The newest snapshots listed; the rest are a query away (ducklake_snapshots).
SNAPSHOTS_SHOWN = 10
NOTHING_PUBLISHED = "nothing published yet: run `liger-warehouse refresh`"


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
    catalog: CatalogOpt = None,
    data: DataOpt = None,
) -> None:
    """Print the lake's snapshots, the last refresh, row counts and the upstream head.

    Each snapshot is one published refresh or import: its id (for `sql --as-of`), when it was
    committed and what it did. The last refresh is the one the warehouse recorded
    (state/last-refresh.json): the CLI records the refreshes it runs, the daemon's sensors those
    launched by the schedule or the UI. The upstream head is the newest revision per source that
    the lake holds. --check-upstream tries each upstream request once, for at most a few
    seconds: an upstream that does not answer gets the warehouse's own state and then one line
    saying what was tried. Exit status 1 when nothing has been published yet, or when
    --check-upstream cannot list upstream. Reads the warehouse only: no Dagster.
    """
    from liger_warehouse.runtime.warehouse_status import read_revisions
    from liger_warehouse.upstream.open import open_upstream

    root = warehouse_root(warehouse)
    storage, lake = Storage(root), configured(root, catalog, data)
    con = _published(lake)
    revisions = read_revisions(con)
    out = stdout_console()  # a pipe gets whole lines too
    with ExitStack() as scratch:
        source = None
        if check_upstream:  # a bad --upstream is said before anything else; a silent upstream, after the state
            etags = scratch.enter_context(tempfile.TemporaryDirectory())  # status never writes to the warehouse
            source = open_upstream(tried_once(upstream, CHECK_TIMEOUT), Storage(etags))
        out.print(f"lake: catalog {lake.catalog}, data {lake.data}", soft_wrap=True, markup=False)
        out.print(_snapshots_table(con))
        out.print(f"last refresh: {_last_refresh(storage)}")
        out.print(_row_counts(con))
        con.close()
        ahead, failure = (None, None) if source is None else _upstream_ahead(revisions, source)
    out.print(_heads_table(revisions, ahead))
    if failure is not None:
        console.print(f"[red]error:[/red] {escape(failure)}", soft_wrap=True)
        raise typer.Exit(1)


def _published(lake: Lake) -> duckdb.DuckDBPyConnection:
    """A reader of the newest snapshot; exits, status 1, when no refresh has published one."""
    try:
        con = read_lake(lake)
    except NoWarehouse:
        console.print(NOTHING_PUBLISHED)
        raise typer.Exit(1) from None
    tables = con.execute("select count(*) from duckdb_tables() where database_name = ?", [ALIAS]).fetchone()[0]
    if not tables:  # a catalog whose first refresh committed nothing
        con.close()
        console.print(NOTHING_PUBLISHED)
        raise typer.Exit(1)
    return con


def _did(summary: str | None) -> str:
    """What one snapshot's refresh or import did, in a few words, from its commit's summary."""
    if not summary:
        return ""
    s = json.loads(summary)
    parts = [
        f"{s.get('revisions_ingested', 0)} revisions",
        f"+{s.get('results_added', 0)} results",
        f"{s.get('results_restated', 0)} restated",
        f"{s.get('results_removed', 0)} removed",
    ]
    if s.get("withdrawn"):
        parts.append(f"withdrew {s['withdrawn']}")
    return ", ".join(parts)


def _snapshots_table(con: duckdb.DuckDBPyConnection) -> Table:
    rows = con.execute(
        f"select snapshot_id, strftime(snapshot_time at time zone 'UTC', '%Y-%m-%d %H:%M:%S'), commit_message, "
        f"commit_extra_info, map_keys(changes), count(*) over () from ducklake_snapshots('{ALIAS}') "
        f"order by snapshot_id desc limit {SNAPSHOTS_SHOWN}"
    ).fetchall()
    table = Table(title="snapshots, newest first (sql --as-of ID reads one)")
    for column in ("snapshot", "committed (UTC)", "commit message", "what it did"):
        table.add_column(column, justify="right" if column == "snapshot" else "left")
    for snapshot, at, message, summary, changes, _ in rows:
        # A snapshot committed without a summary (the catalog's creation, DuckLake's own
        # maintenance) is described by the kinds of change DuckLake recorded.
        table.add_row(str(snapshot), at, message or "", _did(summary) or ", ".join(changes).replace("_", " "))
    if rows and rows[0][-1] > len(rows):
        table.caption = f"{rows[0][-1] - len(rows)} older: select * from ducklake_snapshots('{ALIAS}')"
    return table


def _row_counts(con: duckdb.DuckDBPyConnection) -> Table:
    files = {
        name: (count, size)
        for name, count, size in con.execute(
            f"select table_name, file_count, file_size_bytes from ducklake_table_info('{ALIAS}')"
        ).fetchall()
    }
    names = sorted(files)
    counts = con.execute(" union all ".join(f"select {i}, count(*) from {name}" for i, name in enumerate(names)))
    rows = dict(counts.fetchall())
    table = Table(title="row counts")
    for column in ("table", "rows", "files", "bytes"):
        table.add_column(column, justify="left" if column == "table" else "right")
    for i, name in enumerate(names):
        table.add_row(name, f"{rows[i]:,}", str(files[name][0]), f"{files[name][1]:,}")
    return table


def _heads_table(revisions: list[dict], behind: dict | None) -> Table:
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


def _upstream_ahead(revisions: list[dict], source: Upstream) -> tuple[dict | None, str | None]:
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
