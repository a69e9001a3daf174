"""Regressions a refresh brought in: read the ``regressions`` view of liger.duckdb, before and
after the rebuild, and tell the new ones apart.

What counts as a regression, and its threshold, is the view's business (``sql/regressions.sql``).
This module only reads it: rows whose ``verdict`` says regression when the view has that
column, every row otherwise. A database without the view yields nothing, with a note why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipelines.database import fetch_database, open_duckdb
from pipelines.store.storage import Storage

VIEW = "regressions"
# Shown in the Markdown table when the view has them, in this order; else every column.
PREFERRED_COLUMNS = (
    "kernel",
    "provider",
    "backend",
    "mode",
    "metric",
    "gpu",
    "workload",
    "base_version",
    "head_version",
    "ratio",
)
MAX_ROWS = 20


@dataclass
class Regressions:
    """The regression rows of one liger.duckdb, newest first."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    note: str | None = None  # why there are no rows to read, when there are none
    exists: bool = True  # False when there was no database at all (a new warehouse)

    @property
    def available(self) -> bool:
        return self.note is None


def _order_by(columns: list[str], has_versions: bool) -> str:
    """Newest first: by the rank of the head version when known, then the largest ratio."""
    keys = []
    if "head_version" in columns and has_versions:
        keys.append("v.version_rank desc nulls last")
    if "ratio" in columns:
        keys.append("r.ratio desc nulls last")
    return f"order by {', '.join(keys)}" if keys else ""


def _has_relation(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    sql = (
        "select count(*) from (select view_name as name from duckdb_views() where not internal "
        "union all select table_name from duckdb_tables()) where name = ?"
    )
    return con.execute(sql, [name]).fetchone()[0] > 0


def read(storage: Storage, database: Path) -> Regressions:
    """Every regression row of the liger.duckdb at ``database`` (a local file whose views read
    ``storage``); an empty result with a note when there is none."""
    if not database.exists():
        return Regressions(note=f"{database.name} does not exist yet", exists=False)
    try:
        with open_duckdb(storage, str(database), read_only=True) as con:
            return _read(con)
    except duckdb.Error as exc:
        return Regressions(note=f"could not read the {VIEW} view: {exc}")


def read_published(storage: Storage) -> Regressions:
    """The regressions of the liger.duckdb readers see now, before a rebuild replaces it."""
    try:
        return read(storage, fetch_database(storage))
    except FileNotFoundError as exc:
        return Regressions(note=str(exc), exists=False)


def _read(con: duckdb.DuckDBPyConnection) -> Regressions:
    if not _has_relation(con, VIEW):
        return Regressions(note=f"liger.duckdb has no `{VIEW}` view yet")
    columns = [d[0] for d in con.execute(f"select * from {VIEW} limit 0").description]
    has_versions = "head_version" in columns and _has_relation(con, "dim_version")
    join = "left join dim_version v on v.liger_version = r.head_version" if has_versions else ""
    where = "where lower(cast(r.verdict as varchar)) like '%regress%'" if "verdict" in columns else ""
    select = ", ".join(f"r.{_quote(c)}" for c in columns)
    sql = f"select {select} from {VIEW} r {join} {where} {_order_by(columns, has_versions)}"
    return Regressions(columns, con.execute(sql).fetchall())


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _freeze(value: object) -> object:
    """A hashable stand-in for one cell: list cells (e.g. the p50s) become tuples."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _keys(regressions: Regressions, columns: list[str]) -> list[tuple]:
    index = [regressions.columns.index(c) for c in columns]
    return [tuple(_freeze(row[i]) for i in index) for row in regressions.rows]


def new_since(before: Regressions, after: Regressions) -> Regressions:
    """The rows of ``after`` that ``before`` did not hold: what this refresh brought in.

    A row whose numbers moved (a restated result) counts as new, since this refresh changed it.
    Rows are compared on the columns both databases have, so a view that gained a column does
    not make every row new. A new warehouse has no database before: all its rows are new.
    """
    if not after.available:
        return after
    if not before.exists:
        return after
    if not before.available:
        return Regressions(note=f"nothing to compare with: {before.note}")
    shared = [c for c in after.columns if c in before.columns]
    if not shared:
        return Regressions(note=f"the {VIEW} view changed all its columns: nothing to compare with")
    old = set(_keys(before, shared))
    rows = [row for row, key in zip(after.rows, _keys(after, shared), strict=True) if key not in old]
    return Regressions(after.columns, rows)


def _format(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}"
    if isinstance(value, list | tuple):
        shown = ", ".join(_format(v) for v in value[:4])
        return f"[{shown}{', …' if len(value) > 4 else ''}]"
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def markdown(regressions: Regressions, limit: int = MAX_ROWS) -> str:
    """The first ``limit`` rows (the newest) as a Markdown table."""
    if not regressions.available:
        return f"_{regressions.note}_"
    if not regressions.rows:
        return "no regressions"
    shown = [c for c in PREFERRED_COLUMNS if c in regressions.columns]
    if len(shown) < 3:
        shown = regressions.columns
    index = [regressions.columns.index(c) for c in shown]
    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    for row in regressions.rows[:limit]:
        lines.append("| " + " | ".join(_format(row[i]) for i in index) + " |")
    if len(regressions.rows) > limit:
        lines.append(f"\n{limit} newest of {len(regressions.rows)}")
    return "\n".join(lines)
