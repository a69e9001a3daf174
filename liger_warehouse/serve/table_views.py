"""The view of each published table: a select of the Parquet parts a generation holds, named
relative to the warehouse root (``warehouse_files``), so a copied warehouse reads its own parts."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from liger_warehouse.store.generations import Generation, Part

ROOT_UNSET = (
    "liger.duckdb reads the Parquet parts of the warehouse it is in: set file_search_path to that "
    "directory first, e.g. duckdb -readonly -cmd \"set file_search_path = 'warehouse'\" warehouse/liger.duckdb"
)


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# CASE, not if(): DuckDB 1.x cannot bind the if() that DuckDB 2 stores. One call per list of
# parts, not one per part: a view over 900 parts bound in 0.11 s with a call per part, 0.01 s so.
WAREHOUSE_FILES_MACRO = f"""
create or replace macro warehouse_files(keys) as
case when current_setting('file_search_path') = '' then error({quote(ROOT_UNSET)})
     else [rtrim(current_setting('file_search_path'), '/') || '/' || key for key in keys] end
"""
# The macro of databases written before it: one call per part.
ONE_FILE_MACRO = "warehouse_file"


def _empty_select(table: str) -> str:
    """No rows, but the table's columns and types: an empty table needs no file."""
    return _empty_selects()[table]


@cache
def _empty_selects() -> dict[str, str]:
    """Every table's empty select, typed in one connection: opening one per table cost a refresh
    0.4 s (18 empty tables in a refresh's audit, 23 ms each)."""
    from liger_warehouse.model.tables import SCHEMAS, empty

    with duckdb.connect() as con:
        relations = {table: con.from_arrow(empty(table)) for table in SCHEMAS}
        return {
            table: "select "
            + ", ".join(f'cast(null as {kind}) as "{name}"' for name, kind in zip(r.columns, r.types, strict=True))
            + " where false"
            for table, r in relations.items()
        }


def parts_select(table: str, parts: Sequence[Part]) -> str:
    """A select of the rows of ``table``'s ``parts``, named relative to the warehouse root. Parts
    kept in folders named by a column's value (``key_folder``) are read as Hive partitions of
    that column: a filter on it skips the other parts unopened. Parts without rows (a source
    without speedup pairs, kept so that it is not derived again) are not read."""
    parts = [p for p in parts if p.rows]
    if not parts:
        return _empty_select(table)
    files = ", ".join(quote(p.file) for p in parts)
    if column := _key_column(parts):
        # The table's own columns by name: a folder of the root named like `name=value` would
        # add a column of that name too.
        return (
            f"select {_columns(table)} from read_parquet(warehouse_files([{files}]), "
            f"hive_partitioning = true, hive_types = {{{quote(column)}: 'varchar'}})"
        )
    return f"select * from read_parquet(warehouse_files([{files}]), hive_partitioning = false)"


@cache
def _columns(table: str) -> str:
    from liger_warehouse.model.tables import SCHEMAS

    return ", ".join(f'"{name}"' for name in SCHEMAS[table].names)


def _key_column(parts: Sequence[Part]) -> str | None:
    """The column whose value names the folder of every part, if one does."""
    # String operations, not PurePosixPath: this runs over every part of every view built.
    columns = {p.file.rpartition("/")[0].rpartition("/")[2].partition("=")[:2] for p in parts}
    if len(columns) != 1:
        return None
    column, equals = columns.pop()
    return column if equals else None


def table_view_sql(gen: Generation, table: str, readers: bool = False) -> str:
    """The view of ``table``: the parts generation ``gen`` holds; for ``readers``, through the
    table's readers' copy when it has one (``readers_select``)."""
    select = readers_select(gen, table) if readers else parts_select(table, gen.parts(table))
    return f"create or replace view {table} as {select}"


def readers_select(gen: Generation, table: str) -> str:
    """The rows of ``table`` in ``gen`` as readers read them: its readers' copy (one file, sorted
    so that filters skip most of it), less the rows of keys whose parts were replaced or removed
    since the copy was written, and the parts beside it. The same rows as ``parts_select``."""
    copy = gen.readers.get(table)
    parts = gen.parts(table)
    if copy is None:
        return parts_select(table, parts)
    select = f"select {_columns(table)} from read_parquet(warehouse_files([{quote(copy.file)}]))"
    if stale := sorted({p.key for p in copy.stale(parts)}):
        select += f' where "{_key_column(copy.covers)}" not in ({", ".join(quote(k) for k in stale)})'
    beside = copy.beside(parts)
    return f"{select} union all {parts_select(table, beside)}" if beside else select
