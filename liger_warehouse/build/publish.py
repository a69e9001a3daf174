"""One refresh, one DuckLake transaction: ingest, change points, the objects of ``sql/`` and
the blocking checks, committed only when every check passes.

Anything that stops it before the commit (a failed check, an error, Ctrl-C, SIGKILL) leaves the
published lake as it was: readers see the old snapshot until the commit and the new one after
it. Files a killed run left behind are DuckLake's to clean up (``maintenance.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from liger_warehouse import settings
from liger_warehouse.analysis import change_points
from liger_warehouse.analysis.series_batch import Counts
from liger_warehouse.analysis.series_pool import SeriesPool
from liger_warehouse.audit import checks
from liger_warehouse.build.ingest import Ingest
from liger_warehouse.build.row_source import RowSource
from liger_warehouse.lake.connect import open_lake, writer_turn
from liger_warehouse.lake.location import ALIAS, Lake
from liger_warehouse.lake.objects import Created, create_sql_objects, create_tables, sql_current
from liger_warehouse.model.revisions import UpstreamListing
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.raw import RawStore

AUTHOR = "liger-warehouse"
# What a publish reports to progress listeners (``runtime.progress``, task "publish") as it ends each.
PHASES = ("ingest", "change points", "derived tables and views", "blocking checks", "commit")


class ChecksFailed(RuntimeError):
    """A blocking check failed: nothing was committed."""

    def __init__(self, outcomes: list[checks.CheckOutcome]) -> None:
        self.outcomes = outcomes
        failed = [o for o in outcomes if not o.passed]
        named = "; ".join(f"{o.table}.{o.name}: {o.failures} ({', '.join(o.examples[:2])})" for o in failed)
        super().__init__(f"blocking checks failed, nothing published: {named}")


class PublishConflict(RuntimeError):
    """Another writer committed to the same lake first, or the catalog stayed locked: this
    refresh committed nothing."""


@dataclass
class Published:
    """What one publishing transaction did. ``snapshot`` is None when nothing was committed
    (upstream held nothing new and the catalog's SQL was current)."""

    summary: dict
    snapshot: int | None = None
    outcomes: list[checks.CheckOutcome] = field(default_factory=list)
    change_points: Counts | None = None
    created: Created | None = None


def publish(
    lake: Lake,
    raw: RawStore,
    listing: UpstreamListing,
    contents: dict[str, str],
    *,
    withdraw: str | None = None,
    rows: RowSource | Callable[[duckdb.DuckDBPyConnection], RowSource] | None = None,
    pool: SeriesPool | None = None,
    message: str = "refresh",
    now: datetime | None = None,
    on_checks: Callable[[list[checks.CheckOutcome]], None] | None = None,
) -> Published:
    """Ingest what ``listing`` holds that the lake does not and publish it as one snapshot.
    ``rows`` reads new revisions' records; a callable makes it from the transaction's connection
    (the importer checks claimed digests against the dimension rows this transaction reads).

    Raises ``ChecksFailed`` (after ``on_checks`` saw the outcomes) or ``PublishConflict``, having
    committed nothing."""
    with writer_turn(lake), open_lake(lake) as con:
        con.execute("begin")
        create_tables(con)
        ingest = Ingest(con, raw, now, rows(con) if callable(rows) else rows)
        changed = ingest.run(listing, contents, withdraw)
        summary = ingest.writer.summary_dict(withdraw)
        _done("ingest")
        current = sql_current(con)
        if not changed and current:
            con.execute("rollback")
            watchers.report("publish", len(PHASES), len(PHASES), "nothing to publish")
            return Published(summary)
        counts = change_points.update(con, pool, ingest.writer.touched_series)
        _done("change points")
        created = create_sql_objects(con, derived_only=current)
        _done("derived tables and views")
        failpoint("audit")
        outcomes = checks.audit(con, raw, ingest.new_revisions)
        _done("blocking checks")
        if on_checks is not None:
            on_checks(outcomes)
        if not all(o.passed for o in outcomes):
            raise ChecksFailed(outcomes)
        con.execute(f"call {ALIAS}.set_commit_message(?, ?, extra_info => ?)", [AUTHOR, message, json.dumps(summary)])
        failpoint("publish")
        commit(con)
        _done("commit")
        (snapshot,) = con.execute(f"select max(snapshot_id) from ducklake_snapshots('{ALIAS}')").fetchone()
        return Published(summary, snapshot, outcomes, counts, created)


def _done(phase: str) -> None:
    watchers.report("publish", PHASES.index(phase) + 1, len(PHASES), phase)


def commit(con: duckdb.DuckDBPyConnection) -> None:
    """Commit ``con``'s transaction; ``PublishConflict`` when another writer committed first or
    a reader's transaction held the catalog longer than the writer waits."""
    try:
        con.execute("commit")
    except duckdb.TransactionException as exc:
        # DuckLake's own words come last: a conflicting commit, or a catalog someone holds.
        cause = str(exc).strip().splitlines()[-1]
        if "database is locked" in cause:
            raise PublishConflict(
                "the catalog stayed locked (a reader's transaction open longer than "
                f"{settings.COMMIT_WAIT_SECONDS}, or another writer), nothing was published: {cause}"
            ) from None
        raise PublishConflict(f"another writer changed this lake first, nothing was published: {cause}") from None
