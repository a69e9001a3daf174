"""Regressions a refresh brought in: the judged steps of ``regressions`` whose head build the
refresh created or changed (a new nightly run, a new release run, new main-branch rows of a
version), but for those triage mutes or acknowledges.

A step's verdict reads each series' noise, and the noise moves a little with every run added,
so comparing the whole ``regressions`` view before and after a refresh would call old steps new
whenever their evidence shifted. A step is new when its head build is: ``dim_build`` at the new
snapshot and at the one before it (time travel) say which. The first publish has nothing to
compare with: its history is not news.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import duckdb

from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import ALIAS, Lake

VIEW = "regressions"
# Shown in the Markdown table, in this order.
SHOWN = ("kernel", "provider", "mode", "metric", "gpu", "workload", "base_version", "head_version",
         "change", "adjusted_change", "noise", "z")  # fmt: skip
MAX_ROWS = 20
# Only the columns shown (head_version among them, which new_in_snapshot filters on) and the series, which
# tells the rows apart: the view's other columns (the evidence of each verdict) cost as much again to
# compute (at 10^7 results, every regression with every column 1.34-1.39 s, these 0.83-0.84 s).
NEWEST_FIRST = (
    f"select {', '.join(f'r.{c}' for c in (*SHOWN, 'series_digest'))} "
    "from regressions as r join dim_build as b on b.build = r.head_version "
    # a muted or acknowledged step is no news to warn of (docs/TRIAGE.md)
    "where r.verdict = 'regression' and not r.muted and r.acknowledged is null "
    "order by b.build_rank desc, r.adjusted_change desc, r.kernel"
)
BUILDS = "select build, sources, results from dim_build"


@dataclass
class Regressions:
    """Regression rows of one snapshot (the columns ``SHOWN`` and the series), newest build first."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    note: str | None = None  # why nothing was checked, when nothing was
    compared: str = ""  # which steps were looked at

    @property
    def available(self) -> bool:
        return self.note is None


def read(con: duckdb.DuckDBPyConnection) -> Regressions:
    """Every regression ``con`` (a reader of the lake) sees, newest build first (``NEWEST_FIRST``)."""
    try:
        cursor = con.execute(NEWEST_FIRST)
        return Regressions([d[0] for d in cursor.description], cursor.fetchall())
    except duckdb.Error as exc:
        return Regressions(note=f"could not read the {VIEW} view: {exc}")


def previous_snapshot(con: duckdb.DuckDBPyConnection, snapshot: int) -> int | None:
    """The newest snapshot before ``snapshot`` that the lake still keeps, if any."""
    (before,) = con.execute(
        f"select max(snapshot_id) from ducklake_snapshots('{ALIAS}') where snapshot_id < ?", [snapshot]
    ).fetchone()
    return before


def changed_builds(before: list[tuple], after: list[tuple]) -> list[str]:
    """Builds ``after`` has that ``before`` did not, or that stand on other results now (rows
    of ``BUILDS``)."""
    was = {row[0]: row for row in before}
    return sorted(row[0] for row in after if was.get(row[0]) != row)


def _builds_before(lake: Lake, snapshot: int) -> list[tuple] | str:
    """``dim_build`` at ``snapshot``, or why it cannot be compared with."""
    try:
        with read_lake(lake, as_of=str(snapshot)) as con:
            return con.execute(BUILDS).fetchall()
    except duckdb.CatalogException:
        return "first publish, nothing to compare with"
    except duckdb.Error as exc:
        return f"snapshot {snapshot} cannot be read: {str(exc).splitlines()[0]}"


def new_in_snapshot(lake: Lake, snapshot: int) -> Regressions:
    """The regressions at ``snapshot`` in steps whose head build the refresh that published it
    created or changed, compared with the snapshot before it."""
    with read_lake(lake, as_of=str(snapshot)) as con:
        regressions = read(con)
        if not regressions.available:
            return regressions
        after = con.execute(BUILDS).fetchall()
        previous = previous_snapshot(con, snapshot)
    before = "first publish, nothing to compare with" if previous is None else _builds_before(lake, previous)
    if isinstance(before, str):
        return Regressions(note=f"{before}: the history holds {len(regressions.rows)} regressions")
    return only_builds(regressions, changed_builds(before, after))


def only_builds(regressions: Regressions, builds: list[str]) -> Regressions:
    """The rows of ``regressions`` whose head build is one of ``builds``: a filter of the rows
    already read, so the view is not evaluated a second time."""
    if not builds:
        return Regressions(regressions.columns, compared="no build changed")
    head, changed = regressions.columns.index("head_version"), set(builds)
    found = Regressions(regressions.columns, [row for row in regressions.rows if row[head] in changed])
    found.compared = f"steps into the {len(builds)} builds this refresh changed: {', '.join(builds[:5])}" + (
        ", …" if len(builds) > 5 else ""
    )
    return found


def _format(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}"
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def markdown(regressions: Regressions, limit: int = MAX_ROWS) -> str:
    """The first ``limit`` rows (the newest) as a Markdown table."""
    if not regressions.available:
        return f"_{regressions.note}_"
    if not regressions.rows:
        return "no regressions"
    index = [regressions.columns.index(c) for c in SHOWN]
    lines = ["| " + " | ".join(SHOWN) + " |", "|" + "---|" * len(SHOWN)]
    for row in regressions.rows[:limit]:
        lines.append("| " + " | ".join(_format(row[i]) for i in index) + " |")
    if len(regressions.rows) > limit:
        lines.append(f"\n{limit} newest of {len(regressions.rows)}")
    return "\n".join(lines)
