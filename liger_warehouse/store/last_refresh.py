"""The last refresh of a warehouse, kept in the warehouse itself (``state/last-refresh.json``).

``status`` reads it instead of the Dagster instance: a warehouse answers for its own refreshes
wherever it is copied or whichever instance ran them, and reading it imports no Dagster. The CLI
writes it around the runs it launches: ``started``, then the outcome, or ``nothing new`` when no
run was needed; a CLI run killed before its end leaves ``started``. The daemon's sensors write
the outcome of refreshes launched elsewhere (the schedule, the UI), stamped with the run's end,
and never over a newer record.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal, get_args

import msgspec

from liger_warehouse.store.storage import Storage

LAST_REFRESH = "state/last-refresh.json"
Outcome = Literal["started", "success", "failure", "canceled", "nothing new"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


class RefreshOutcome(msgspec.Struct, frozen=True):
    """What the newest refresh of this warehouse came to, and when (seconds since the epoch)."""

    outcome: Outcome
    at: float
    run_id: str | None = None
    launched_by: str | None = None

    def describe(self) -> str:
        """One line for ``status``: when, what, and which run."""
        when = datetime.fromtimestamp(self.at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if self.outcome == "nothing new":
            return f"{when}, nothing new upstream (no run needed)"
        run = f"run {self.run_id[:8]}" if self.run_id else "no run id"
        by = f", launched by {self.launched_by}" if self.launched_by else ""
        if self.outcome == "started":
            return f"{when}, started ({run}{by}); no end recorded: still running, or stopped before it could say"
        return f"{when}, {self.outcome} ({run}{by})"


def record(
    storage: Storage,
    outcome: Outcome,
    *,
    run_id: str | None = None,
    launched_by: str | None = None,
    at: float | None = None,
) -> None:
    """Replace the record with ``outcome`` at ``at`` (seconds since the epoch; default now),
    unless the record holds a later one (a sensor catching up on an older run)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown refresh outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
    entry = RefreshOutcome(outcome, datetime.now(UTC).timestamp() if at is None else at, run_id, launched_by)
    try:
        stored = last(storage)
    except ValueError:  # a damaged record is replaced
        stored = None
    if stored is None or stored.at <= entry.at:
        storage.write_bytes(LAST_REFRESH, msgspec.json.encode(entry))


def last(storage: Storage) -> RefreshOutcome | None:
    """The record, or None when no refresh has written one (a warehouse older than it). A record
    that cannot be read is a ValueError naming the file."""
    if not storage.exists(LAST_REFRESH):
        return None
    try:
        text = storage.read_text(LAST_REFRESH)
    except OSError as exc:
        raise ValueError(f"{storage.uri(LAST_REFRESH)} cannot be read: {exc}") from None
    try:
        entry = msgspec.json.decode(text, type=RefreshOutcome)  # checks every field's type
        entry.describe()  # a time out of range fails here, not in status
    except (msgspec.DecodeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{storage.uri(LAST_REFRESH)} is not a refresh record: {exc}") from None
    return entry
