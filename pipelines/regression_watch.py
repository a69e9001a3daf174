"""Regressions a refresh brought in: read the ``regressions`` view of liger.duckdb, before and
after the rebuild, and tell the new ones apart.

What counts as a regression, and its threshold, is the view's business (``sql/regressions.sql``).
This module only reads it: rows whose ``verdict`` says regression when the view has that
column, every row otherwise. A database without the view yields nothing, with a note why.

Reading the whole view of the previous database costs as much as reading the new one, and
grows with history. ``new_in_refresh`` mostly avoids it: a row of ``regressions`` is two
consecutive version points of a series, and a version point is the standing result of a series
and version (``sql/version_points.sql``). Between two generations results are only added, so a
point changes only when a result added in this refresh stands for it (its revision is one
ingested in this refresh) or when a result of the series changed (``is_current`` flips when a
revision leaves upstream or a newer one replaces it). Every other row is one the previous
database held, provided the analytic SQL, the dimension rows and the release order of the
versions did not change. Where any of that is not so, the whole previous view is read.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipelines.database import fetch_database, open_duckdb
from pipelines.store.generations import Generation, GenerationStore
from pipelines.store.storage import Storage
from pipelines.tables import SCHEMAS

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
    # How rows were told new (new_in_refresh): against the whole previous view, or by the
    # revisions and results this refresh changed.
    compared: str | None = None

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


def _read(con: duckdb.DuckDBPyConnection, series: list[str] | None = None) -> Regressions:
    """The regression rows, newest first; only those of ``series`` when given (the view has a
    ``series_digest`` column then)."""
    if not _has_relation(con, VIEW):
        return Regressions(note=f"liger.duckdb has no `{VIEW}` view yet")
    columns = _columns(con)
    has_versions = "head_version" in columns and _has_relation(con, "dim_version")
    join = "left join dim_version v on v.liger_version = r.head_version" if has_versions else ""
    where = ["lower(cast(r.verdict as varchar)) like '%regress%'"] if "verdict" in columns else []
    if series is not None:
        # A list of literals: DuckDB pushes it below the view's window into the fact scan.
        where.append(f"r.series_digest in ({', '.join(_literal(s) for s in series) or 'null'})")
    where_sql = f"where {' and '.join(where)}" if where else ""
    select = ", ".join(f"r.{_quote(c)}" for c in columns)
    sql = f"select {select} from {VIEW} r {join} {where_sql} {_order_by(columns, has_versions)}"
    return Regressions(columns, con.execute(sql).fetchall())


def _columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [d[0] for d in con.execute(f"select * from {VIEW} limit 0").description]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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


def new_since(before: Regressions, after: Regressions, ignored: tuple[str, ...] = ()) -> Regressions:
    """The rows of ``after`` that ``before`` did not hold: what this refresh brought in.

    A row whose numbers moved (a restated result) counts as new, since this refresh changed it.
    Rows are compared on the columns both databases have (but ``ignored``), so a view that
    gained a column does not make every row new. A new warehouse has no database before: its
    first publish brings the whole history, which is not news, so nothing is compared (a note
    says why).
    """
    if not after.available:
        return after
    if not before.exists:
        return first_publish(after)
    if not before.available:
        return Regressions(note=f"nothing to compare with: {before.note}")
    shared = [c for c in after.columns if c in before.columns and c not in ignored]
    if not shared:
        return Regressions(note=f"the {VIEW} view changed all its columns: nothing to compare with")
    old = set(_keys(before, shared))
    rows = [row for row, key in zip(after.rows, _keys(after, shared), strict=True) if key not in old]
    return Regressions(after.columns, rows)


def first_publish(after: Regressions) -> Regressions:
    """Nothing to compare with: the note says so, and how many regressions the history holds."""
    return Regressions(
        note=f"first publish, nothing to compare with: the history holds {len(after.rows)} regressions",
        exists=after.exists,
    )


# -- new in this refresh, reading the previous database only where needed --------------------

# What a schema migration may change in a row that stays the same regression.
RELABELLED = ("series_digest", "backend")
# The shortcut needs these columns in both databases.
KEY_COLUMNS = ("series_digest", "base_revision", "head_revision")
# What the regressions view reads besides fact_result: each must keep every row it had (new
# rows may come), or the previous database is read whole. dim_version is checked for the
# release order instead; dim_upstream_revision for the labels (run, commit) only.
DIMENSIONS = ("dim_protocol", "dim_workload", "dim_environment", "dim_implementation")
# fact_result columns that may change for a result that stays (the revision that last showed
# it); a change in any other column makes its series a candidate.
MUTABLE = ("last_revision_digest",)
MAX_SERIES = 2000


def snapshot(storage: Storage, into: Path) -> Path | None:
    """A copy of the liger.duckdb readers see now, in the directory ``into``; None when there is
    none (a new warehouse). The rebuild replaces the file: the copy still reads the previous
    generation's parts, which a refresh does not delete. The file only holds views: small."""
    try:
        published = fetch_database(storage)
    except FileNotFoundError:
        return None
    copy = into / "before.duckdb"
    shutil.copyfile(published, copy)
    return copy


def new_in_refresh(gens: GenerationStore, before: Path | None, after: Regressions, database: Path) -> Regressions:
    """The rows of ``after`` (read from ``database``) that the liger.duckdb copied at ``before``
    did not hold: ``new_since(read(before), after)``, without reading the whole previous view
    where the revisions and results this refresh changed tell the new rows apart exactly."""
    if not after.available:
        return after
    if before is None:
        return first_publish(after)
    if gens.current().summary.get("migration"):
        # A schema migration relabels series (docs/SCHEMA.md): a regression the previous view
        # held under its old series digest or backend is not new.
        new = new_since(read(gens.storage, before), after, ignored=RELABELLED)
        new.compared = "against the whole previous regressions view, but for what the schema migration relabelled"
        return new
    try:
        found = _by_changes(gens, before, after, database)
    except (duckdb.Error, OSError, KeyError, ValueError):
        found = None  # anything unexpected: compare everything
    if found is not None:
        return found
    new = new_since(read(gens.storage, before), after)
    new.compared = "against the whole previous regressions view"
    return new


@dataclass
class _Changes:
    new_labels: set[str]  # run or commit of every revision this refresh ingested
    old_labels: set[str]  # ... of every revision the previous generation had
    series: set[str]  # series with a result that changed (not only added)


def _by_changes(gens: GenerationStore, before: Path, after: Regressions, database: Path) -> Regressions | None:
    """None when the shortcut would not be exact, so the caller compares everything."""
    if not set(KEY_COLUMNS) <= set(after.columns):
        return None
    with open_duckdb(gens.storage, str(before), read_only=True) as old:
        if not _has_relation(old, VIEW) or _columns(old) != after.columns:
            return None
        old_id, old_sql = _generation_id(old), _definitions(old)
        with open_duckdb(gens.storage, str(database), read_only=True) as new:
            new_id, new_sql = _generation_id(new), _definitions(new)
        if old_sql != new_sql or not old_id or not new_id:
            return None
        changes = _changes(gens, gens.load(old_id), gens.load(new_id))
        if changes is None:
            return None
        series, base, head = (after.columns.index(c) for c in KEY_COLUMNS)
        fresh = changes.new_labels - changes.old_labels
        # Rows with a revision the previous generation did not have cannot be in its view.
        unseen = {i for i, row in enumerate(after.rows) if row[base] in fresh or row[head] in fresh}
        # Rows of a new revision under a label seen before, or of a series whose results
        # changed: compare with the previous view's rows of their series.
        check = [
            i
            for i, row in enumerate(after.rows)
            if i not in unseen
            and (row[base] in changes.new_labels or row[head] in changes.new_labels or row[series] in changes.series)
        ]
        old_rows = set()
        if check:
            wanted = sorted({after.rows[i][series] for i in check})
            # Past a few thousand series a list of literals costs more than reading them all.
            old_rows = set(_keys(_read(old, wanted if len(wanted) <= MAX_SERIES else None), after.columns))
    keys = _keys(after, after.columns)
    picked = unseen | {i for i in check if keys[i] not in old_rows}
    rows = [row for i, row in enumerate(after.rows) if i in picked]
    described = f"by the {len(changes.new_labels)} revisions ingested"
    if changes.series:
        described += f" and {len(changes.series)} series whose results changed"
    return Regressions(after.columns, rows, compared=described)


def _generation_id(con: duckdb.DuckDBPyConnection) -> str | None:
    if not _has_relation(con, "warehouse_generation"):
        return None
    return con.execute("select generation_id from warehouse_generation").fetchone()[0]


def _definitions(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The SQL of every analytic view and macro: the same in both databases, or the rows may
    differ for that reason alone."""
    views = con.execute(
        "select view_name, sql from duckdb_views() where not internal and database_name = current_database()"
    ).fetchall()
    macros = con.execute(
        "select function_name, macro_definition from duckdb_functions() where not internal "
        "and function_type in ('macro', 'table_macro') and database_name = current_database()"
    ).fetchall()
    skip = {*SCHEMAS, "warehouse_generation"}
    return {f"view {n}": sql for n, sql in views if n not in skip} | {f"macro {n}": sql for n, sql in macros}


def _rows(gens: GenerationStore, gen: Generation, table: str, columns: list[str] | None = None) -> list[dict]:
    """A small whole table of ``gen``."""
    return gens.read_table(gen, table, columns).to_pylist()


def _frozen(rows: list[dict]) -> set[tuple]:
    return {tuple(sorted((k, _freeze(v)) for k, v in row.items())) for row in rows}


def _changes(gens: GenerationStore, old: Generation, new: Generation) -> _Changes | None:
    """What changed between two generations, as far as the regressions view can tell; None
    when a row it reads changed in a way the shortcut does not follow."""
    files = {t: ({p.file for p in old.parts(t)}, {p.file for p in new.parts(t)}) for t in SCHEMAS}
    for table in DIMENSIONS:
        was, now = files[table]
        if was != now and not _frozen(_rows(gens, old, table)) <= _frozen(_rows(gens, new, table)):
            return None
    # Revisions: labels as the views write them, coalesce(run, commit).
    columns = ["revision_digest", "run", "commit"]
    was = {r["revision_digest"]: r for r in _rows(gens, old, "dim_upstream_revision", columns)}
    now = {r["revision_digest"]: r for r in _rows(gens, new, "dim_upstream_revision", columns)}
    if any(now.get(d) != r for d, r in was.items()):
        return None
    label = lambda r: r["run"] if r["run"] is not None else r["commit"]  # noqa: E731
    new_labels = {label(r) for d, r in now.items() if d not in was}
    old_labels = {label(r) for r in was.values()}
    # Versions: the release order of the versions both know must not change.
    columns = ["liger_version", "version_rank"]
    was_rank = {r["liger_version"]: r["version_rank"] for r in _rows(gens, old, "dim_version", columns)}
    now_rank = {r["liger_version"]: r["version_rank"] for r in _rows(gens, new, "dim_version", columns)}
    if not set(was_rank) <= set(now_rank):
        return None
    if sorted(was_rank, key=lambda v: (was_rank[v] is None, was_rank[v] or 0)) != sorted(
        was_rank, key=lambda v: (now_rank[v] is None, now_rank[v] or 0)
    ):
        return None
    # Results: parts both generations share hold the same rows; read the others.
    changed = _changed_results(gens, old, new, set(now) - set(was))
    if changed is None:
        return None
    return _Changes(new_labels, old_labels, changed)


def _changed_results(
    gens: GenerationStore, old: Generation, new: Generation, new_revisions: set[str]
) -> set[str] | None:
    """Series with a result that changed (other than the revision that last showed it), or
    that a new result came to from a revision ingested before; None when a result left."""
    was_files = {p.file for p in old.parts("fact_result")}
    now_files = {p.file for p in new.parts("fact_result")}
    gone = [gens.storage.uri(p.file) for p in old.parts("fact_result") if p.file not in now_files]
    came = [gens.storage.uri(p.file) for p in new.parts("fact_result") if p.file not in was_files]
    if not came:
        return None if gone else set()
    compared = [c for c in SCHEMAS["fact_result"].names if c not in MUTABLE]
    differs = " or ".join(f"g.{_quote(c)} is distinct from c.{_quote(c)}" for c in compared)
    files = lambda uris: "[" + ", ".join(_literal(u) for u in uris) + "]"  # noqa: E731
    with open_duckdb(gens.storage) as con:
        con.execute(f"create temp view came as select * from read_parquet({files(came)})")
        if gone:
            con.execute(f"create temp view gone as select * from read_parquet({files(gone)})")
            left, series = con.execute(
                "select count(*) filter (where c.result_digest is null), "
                f"list(distinct g.series_digest) filter (where c.result_digest is not null and ({differs})) "
                "from gone as g left join came as c using (result_digest)"
            ).fetchone()
            if left:
                return None
        else:
            con.execute("create temp view gone as select * from came limit 0")
            series = []
        con.execute("create temp table new_revision (revision_digest varchar)")
        con.executemany("insert into new_revision values (?)", [[d] for d in sorted(new_revisions)])
        (late,) = con.execute(
            "select list(distinct c.series_digest) from came as c anti join gone as g using (result_digest) "
            "where c.first_revision_digest not in (select revision_digest from new_revision)"
        ).fetchone()
    return set(series or []) | set(late or [])


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
