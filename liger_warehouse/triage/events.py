"""Triage writes: each command checks what it names against the lake and appends one
``triage_event`` row in a transaction of its own, or writes nothing and says why in one line.

A triage write is the lake's next snapshot, like a refresh: a refresh never rewrites the table,
so what people wrote survives every refresh (and a killed one), and a time-travel read shows the
triage as it stood then. The views that read it are in ``sql/views/`` (``triage_state``,
``series_triage``, ``series_acknowledgements``, ``series_annotations``); ``judge`` joins them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from liger_warehouse.build.publish import commit
from liger_warehouse.lake.connect import open_lake, writer_turn
from liger_warehouse.lake.location import ALIAS, Lake, NoWarehouse
from liger_warehouse.lake.objects import create_derived_reading, create_sql_objects, create_tables, sql_current

ACK_KINDS = ("expected", "infra", "invalid", "fixed")
SCOPES = ("series", "sweep", "kernel")
# A threshold is a relative change of p50: beyond 1000% it is no threshold but a typo.
MAX_THRESHOLD = 10.0
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
# A series digest (`sha256:` and 64 hex digits) or the start of its hex part, `sha256:` optional.
_DIGEST_PREFIX = re.compile(r"(?:sha256:)?([0-9a-f]{6,64})")


class TriageRejected(ValueError):
    """A triage write that names something the lake does not hold, or says it badly: nothing
    was written, and the message says what, in one line."""


@dataclass(frozen=True)
class Target:
    """What a triage write is about: a series, a sweep or a kernel (``scope``), or runs alone."""

    scope: str
    target: str | None
    shown: str


@dataclass(frozen=True)
class Event:
    """One row of ``triage_event``, before it is written."""

    action: str
    target: Target
    author: str
    note: str | None = None
    kind: str | None = None
    threshold: float | None = None
    first_run: str | None = None
    last_run: str | None = None
    commits: str | None = None

    def __post_init__(self) -> None:
        if self.action == "ack" and self.kind not in ACK_KINDS:
            raise TriageRejected(f"acknowledgement kind {self.kind!r} is not one of {', '.join(ACK_KINDS)}")

    def row(self) -> list:
        return [
            uuid.uuid4().hex,
            self.action,
            self.target.scope,
            self.target.target,
            self.first_run,
            self.last_run,
            self.commits,
            self.kind,
            self.threshold,
            self.note,
            self.author,
            datetime.now(UTC).replace(tzinfo=None),
        ]


def parse_threshold(text: str) -> float | None:
    """``10%`` or ``0.10`` as a fraction; ``default`` (None) ends a threshold of one's own."""
    word = text.strip().lower()
    if word == "default":
        return None
    try:
        value = float(word.removesuffix("%")) / (100 if word.endswith("%") else 1)
    except ValueError:
        raise TriageRejected(
            f"threshold {text!r} is not a number: give a fraction (0.10), a percentage (10%) or 'default'"
        ) from None
    if not 0 < value <= MAX_THRESHOLD:
        raise TriageRejected(f"threshold {text!r} is out of range: it must be above 0 and at most {MAX_THRESHOLD:.0%}")
    return value


def resolve_target(con: duckdb.DuckDBPyConnection, series: str | None, sweep: str | None, kernel: str | None) -> Target:
    """The one series, sweep (given by any series of it) or kernel named, as the lake holds it."""
    named = [(scope, value) for scope, value in zip(SCOPES, (series, sweep, kernel), strict=True) if value]
    if len(named) != 1:
        raise TriageRejected("name exactly one of --series, --sweep or --kernel")
    scope, value = named[0]
    if scope == "kernel":
        if not con.execute("select 1 from dim_series where kernel = ? limit 1", [value]).fetchone():
            raise TriageRejected(f"unknown kernel {value!r}; the warehouse holds: {_kernels(con)}")
        return Target("kernel", value, f"kernel {value}")
    digest, sweep_key, label = _series(con, value)
    short = digest.removeprefix("sha256:")[:12]
    if scope == "series":
        return Target("series", digest, f"series {short} ({label})")
    return Target("sweep", sweep_key, f"the sweep of series {short} ({label})")


def _series(con: duckdb.DuckDBPyConnection, prefix: str) -> tuple[str, str, str]:
    """The one series whose digest starts with ``prefix``: its digest, sweep key and labels."""
    match = _DIGEST_PREFIX.fullmatch(prefix.strip().lower())
    if match is None:
        raise TriageRejected(
            f"series {prefix!r} is not a series digest (`series_digest`: sha256: and hex digits, or 6 or more of them)"
        )
    rows = con.execute(
        """select series_digest, sweep_key, concat_ws(' ', kernel, mode, provider, metric, workload, 'on', gpu)
           from dim_series where starts_with(series_digest, 'sha256:' || ?) limit 2""",
        [match.group(1)],
    ).fetchall()
    if not rows:
        raise TriageRejected(f"unknown series {prefix!r}: no series digest starts with it")
    if len(rows) > 1:
        raise TriageRejected(f"series {prefix!r} is ambiguous: more than one series digest starts with it")
    return rows[0]


def _kernels(con: duckdb.DuckDBPyConnection) -> str:
    (names,) = con.execute("select string_agg(distinct kernel, ', ' order by kernel) from dim_series").fetchone()
    return names or "no kernel yet"


def resolve_run(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """The gh-pages run ``text`` names (``known_run``: a run name, 'latest', 'previous')."""
    try:
        (run,) = con.execute("select known_run(?)", [text]).fetchone()
    except duckdb.InvalidInputException as exc:
        raise TriageRejected(str(exc).split("Error: ", 1)[-1].splitlines()[0]) from None
    return run


def resolve_commits(con: duckdb.DuckDBPyConnection, text: str) -> tuple[str, str]:
    """The first and the last gh-pages run that benchmarked code of commit range ``A..B`` (or of
    one commit): the run at that commit, else the run whose step from the run before brought it."""
    ends = text.strip().lower().split("..")
    if len(ends) > 2 or not all(_COMMIT.fullmatch(end) for end in ends):
        raise TriageRejected(f"commit range {text!r} is not COMMIT or COMMIT..COMMIT (7 to 40 hex digits each)")
    ranks = [_run_of_commit(con, end) for end in ends]
    first, last = min(ranks), max(ranks)
    return first[1], last[1]


def _run_of_commit(con: duckdb.DuckDBPyConnection, commit: str) -> tuple[int, str]:
    row = con.execute(
        """select upload_rank, run from (
               select upload_rank, run from run_code_order where starts_with(?, commit) or starts_with(commit, ?)
               union all
               select r.upload_rank, r.run from fact_compare_commit as c join run_code_order as r on r.run = c.head_run
               where starts_with(c.sha, ?)
           ) order by upload_rank limit 1""",
        [commit, commit, commit],
    ).fetchone()
    if row is None:
        raise TriageRejected(f"commit {commit!r} is in no gh-pages run the warehouse holds, nor between two of them")
    return row


def is_muted(con: duckdb.DuckDBPyConnection, target: Target) -> bool:
    row = con.execute("select muted from triage_state where scope = ? and target = ?", [target.scope, target.target])
    return bool((row.fetchone() or [False])[0])


def record(lake: Lake, make: Callable[[duckdb.DuckDBPyConnection], Event]) -> tuple[Event, int]:
    """``make(con)`` checks what it names and returns the event; it is appended as the lake's
    next snapshot, which is returned with it. A ``TriageRejected`` from ``make`` writes nothing; so
    does a ``PublishConflict``: a refresh committed to a PostgreSQL catalog first (on a SQLite one
    writers take turns), or readers held the catalog past ``LIGER_WAREHOUSE_COMMIT_WAIT_SECONDS``."""
    if not lake.exists():
        raise NoWarehouse(f"no warehouse at {lake.catalog}: run `liger-warehouse refresh` first")
    with writer_turn(lake), open_lake(lake) as con:
        # leaving the block on an error closes the connection: its transaction is dropped
        con.execute("begin")
        create_tables(con)  # a lake published before triage existed gains its table here
        if not sql_current(con):  # this code's views, to check what the event names against
            create_sql_objects(con)
        event = make(con)
        con.execute("insert into triage_event values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", event.row())
        create_derived_reading(con, "triage_event")
        message = f"{event.action} {event.target.shown}"
        con.execute(f"call {ALIAS}.set_commit_message(?, ?)", [event.author, message])
        commit(con)
        (snapshot,) = con.execute(f"select max(snapshot_id) from ducklake_snapshots('{ALIAS}')").fetchone()
    return event, snapshot
