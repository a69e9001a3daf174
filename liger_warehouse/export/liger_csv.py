"""Time travel: any upstream file exactly as upstream held it at a revision, from the tables.

A revision's file is rebuilt from ``dim_upstream_revision`` (header and the text after it),
``fact_revision_member`` (which result sat at which ordinal, and the exact text after it) with
``fact_result.row_text``, and ``quarantined_row`` (rows that failed validation keep their
ordinal and text too). Raw snapshots are not read: the rebuild proves the tables lost nothing,
and it is checked against the revision's content digest before anything is returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

import duckdb

from liger_warehouse.model.digests import content_digest
from liger_warehouse.model.revisions import GH_PAGES, IMPORT, MAIN

_HEX = re.compile(r"[0-9a-f]{4,40}")

ROWS_SQL = """
select ordinal, row_text, line_suffix from (
    select m.ordinal, f.row_text, m.line_suffix
    from fact_revision_member m join fact_result f using (result_digest)
    where m.revision_digest = $rev
    union all
    select ordinal, row_text, line_suffix from quarantined_row where revision_digest = $rev
)
order by ordinal
"""


class RevisionNotFound(LookupError):
    """No revision, or more than one, answers the request; the message says which."""


class RebuildMismatch(RuntimeError):
    """The rebuilt bytes differ from what upstream held: the tables lost something."""


@dataclass(frozen=True)
class Revision:
    revision_digest: str
    source: str
    source_key: str
    path: str
    commit: str
    run: str | None
    committed_at: datetime | None
    content_digest: str
    row_count: int
    header_text: str
    header_suffix: str

    @property
    def label(self) -> str:
        return f"run {self.run}" if self.run else f"{self.path} @ {self.commit[:12]}"


_COLUMNS = ", ".join(Revision.__dataclass_fields__)


def _revisions(con: duckdb.DuckDBPyConnection, where: str, params: list) -> list[Revision]:
    rows = con.sql(f"select {_COLUMNS} from dim_upstream_revision where {where} order by seq", params=params).fetchall()
    return [Revision(*row) for row in rows]


def find_run(con: duckdb.DuckDBPyConnection, run: str) -> Revision:
    """The revision of one gh-pages run (exact run name, e.g. ``0a62700-v0.6.4``)."""
    found = _revisions(con, "source = ? and run = ?", [GH_PAGES, run])
    if not found:
        raise RevisionNotFound(f"no gh-pages run {run!r} in the warehouse")
    return found[-1]


def find_revision(con: duckdb.DuckDBPyConnection, path: str, as_of: str | None = None) -> Revision:
    """The main-branch (or import) revision of ``path`` that ``as_of`` names; the newest when None.

    ``as_of`` is a commit sha, full or a unique prefix of at least 4 hex digits, of a commit
    that changed ``path``; or an ISO date or date-time (naive means UTC; a bare date means
    the end of that day), naming the newest revision committed at or before it.
    """
    # An import (path import:<name>) has a history like a main-branch path and rebuilds alike.
    history = _revisions(con, "source in (?, ?) and path = ?", [MAIN, IMPORT, path])
    if not history:
        raise RevisionNotFound(f"no main-branch revisions of {path!r} in the warehouse")
    if as_of is None:
        return history[-1]
    text = as_of.strip().lower()
    if _HEX.fullmatch(text):
        matches = [r for r in history if r.commit.startswith(text)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            shas = ", ".join(r.commit[:12] for r in matches)
            raise RevisionNotFound(f"commit prefix {as_of!r} is ambiguous for {path}: {shas}")
    moment = _moment(as_of)
    if moment is None:
        raise RevisionNotFound(f"{as_of!r} is neither a commit that changed {path} nor an ISO date or date-time")
    before = [r for r in history if r.committed_at is not None and r.committed_at <= moment]
    if not before:
        raise RevisionNotFound(f"{path} has no revision committed at or before {moment.isoformat()}Z")
    # Stable sort: of revisions committed at the same moment, the later in history wins.
    return sorted(before, key=lambda r: r.committed_at)[-1]


def _moment(text: str) -> datetime | None:
    """An ISO date or date-time as naive UTC; a date is the last microsecond of its day."""
    text = text.strip()
    try:
        if len(text) <= len("2024-09-03"):
            return datetime.combine(date.fromisoformat(text), time.max)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def rebuild(con: duckdb.DuckDBPyConnection, revision: Revision) -> bytes:
    """The file of ``revision``, byte for byte, or ``RebuildMismatch``."""
    rows = con.sql(ROWS_SQL, params={"rev": revision.revision_digest}).fetchall()
    ordinals = [ordinal for ordinal, _, _ in rows]
    if ordinals != list(range(1, revision.row_count + 1)):
        raise RebuildMismatch(
            f"{revision.label}: the tables hold {len(rows)} rows at ordinals "
            f"{_span(ordinals)}, upstream held {revision.row_count}"
        )
    body = "".join(text + suffix for _, text, suffix in rows)
    data = (revision.header_text + revision.header_suffix + body).encode("utf-8")
    if (got := content_digest(data)) != revision.content_digest:
        raise RebuildMismatch(f"{revision.label}: rebuilt {got}, upstream held {revision.content_digest}")
    return data


def _span(ordinals: list[int]) -> str:
    return f"{min(ordinals)}..{max(ordinals)}" if ordinals else "none"
