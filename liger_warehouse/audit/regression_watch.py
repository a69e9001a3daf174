"""Regressions a refresh brought in: the judged steps of ``regressions`` whose head build the
refresh created or changed (a new nightly run, a new release run, new main-branch rows of a
version).

A step's verdict reads each series' noise, and the noise moves a little with every run added,
so comparing the whole ``regressions`` view before and after a refresh would call old steps new
whenever their evidence shifted. A step is new when its head build is: the builds of the two
generations (``dim_build``) say which. The first publish has nothing to compare with: its
history is not news.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from liger_warehouse.serve.database import open_duckdb
from liger_warehouse.store.generations import Generation, GenerationStore
from liger_warehouse.store.storage import Storage

VIEW = "regressions"
# Shown in the Markdown table, in this order.
SHOWN = ("kernel", "provider", "mode", "metric", "gpu", "workload", "base_version", "head_version",
         "change", "adjusted_change", "noise", "z")  # fmt: skip
MAX_ROWS = 20
# Only the columns shown (head_version among them, which new_in_refresh filters on) and the series, which
# tells the rows apart: the view's other columns (the evidence of each verdict) cost as much again to
# compute (at 10^7 results, every regression with every column 1.34-1.39 s, these 0.83-0.84 s).
NEWEST_FIRST = (
    f"select {', '.join(f'r.{c}' for c in (*SHOWN, 'series_digest'))} "
    "from regressions as r join dim_build as b on b.build = r.head_version "
    "where r.verdict = 'regression' order by b.build_rank desc, r.adjusted_change desc, r.kernel"
)


@dataclass
class Regressions:
    """Regression rows of one liger.duckdb (the columns ``SHOWN`` and the series), newest build first."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    note: str | None = None  # why nothing was checked, when nothing was
    compared: str = ""  # which steps were looked at

    @property
    def available(self) -> bool:
        return self.note is None


def read(storage: Storage, database: Path) -> Regressions:
    """Every regression of the liger.duckdb at ``database``, newest build first (``NEWEST_FIRST``)."""
    try:
        with open_duckdb(storage, str(database), read_only=True) as con:
            cursor = con.execute(NEWEST_FIRST)
            return Regressions([d[0] for d in cursor.description], cursor.fetchall())
    except duckdb.Error as exc:
        return Regressions(note=f"could not read the {VIEW} view: {exc}")


def changed_builds(gens: GenerationStore, before: Generation, after: Generation) -> list[str]:
    """Builds ``after`` has that ``before`` did not, or that stand on other results now."""
    columns = ["build", "sources", "results"]
    was = {r["build"]: r for r in gens.read_table(before, "dim_build", columns).to_pylist()}
    now = gens.read_table(after, "dim_build", columns).to_pylist()
    return sorted(r["build"] for r in now if was.get(r["build"]) != r)


def new_in_refresh(gens: GenerationStore, after: Generation, regressions: Regressions) -> Regressions:
    """The rows of ``regressions`` (``read`` from the liger.duckdb showing ``after``) in steps
    whose head build the refresh that published ``after`` created or changed. A filter of the
    rows already read: the view is not evaluated a second time."""
    if not regressions.available:
        return regressions
    if not after.parent:
        held = len(regressions.rows)
        return Regressions(note=f"first publish, nothing to compare with: the history holds {held} regressions")
    before = gens.load(after.parent)
    if not before.parts("dim_build"):
        return Regressions(note="the previous generation has no builds to compare with")
    builds = changed_builds(gens, before, after)
    if not builds:
        return Regressions(compared="no build changed")
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
