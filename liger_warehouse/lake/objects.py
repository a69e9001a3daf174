"""What the lake's catalog holds: the stored tables (created once, from their Arrow schemas),
then every macro, view and derived table of ``sql/``, created in the order of what each reads.

A derived table is a ``select`` in ``sql/derived/<table>.sql``, recreated whole at each publish;
a macro or view is its file's own ``create or replace``.

Derived tables are built as DuckDB temporary tables, from temporary copies of the stored tables
they read, and copied into the lake at the end. DuckLake gives the optimizer no row count for a
table its own transaction wrote (``DuckLakeTableEntry::GetTableStats`` returns none while a table
has transaction-local inserts), and a publish has written every table its derived tables read:
planned blind, their joins ran out of memory at 2.6 million results. Temporary tables carry
DuckDB's own statistics, and spill to the connection's ``temp_directory`` like any query.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from hashlib import sha256
from importlib import resources
from pathlib import Path

import duckdb

from liger_warehouse.lake.location import ALIAS
from liger_warehouse.lake.sql_files import SqlFile, load_order

# The repository's top-level sql/ (macros/, views/, derived/), installed as the package
# liger_warehouse.sql (setup.py).
SQL_DIR = Path(str(resources.files("liger_warehouse.sql")))
# Which SQL and schema version the catalog's objects were created from (``sql_current``).
BUILT_FROM = "warehouse_build"


class MissingViews(RuntimeError):
    """No analytic view to create: the lake would hold the tables and nothing else."""


@dataclass(frozen=True)
class Created:
    """The names of the objects one publish created, by kind."""

    derived: list[str]
    views: list[str]


# Written into the catalog by every transaction that writes (``create_tables``), so DuckLake's
# compaction uses them too: zstd files are about 40% smaller than DuckLake's default Snappy here,
# at no measured cost (docs/PERFORMANCE.md, target 2).
FILE_OPTIONS = {"parquet_compression": "zstd"}


def set_file_options(con: duckdb.DuckDBPyConnection) -> None:
    """The lake's ``FILE_OPTIONS`` where its catalog says otherwise (a new lake, or one written
    before they were chosen)."""
    have = dict(con.execute(f"select option_name, value from {ALIAS}.options()").fetchall())
    for name, value in FILE_OPTIONS.items():
        if have.get(name) != value:
            con.execute(f"call {ALIAS}.set_option(?, ?)", [name, value])


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """The lake's ``FILE_OPTIONS`` and the stored tables (ingested facts and dimensions, change
    points) it lacks: the first statements of a writing transaction."""
    from liger_warehouse.model.tables import SCHEMAS, STORED

    set_file_options(con)

    have = {
        row[0]
        for row in con.execute(
            "select table_name from duckdb_tables() where database_name = current_database()"
        ).fetchall()
    }
    for name in STORED:
        if name not in have:
            con.register("empty_table", SCHEMAS[name].empty_table())
            con.execute(f"create table {name} as select * from empty_table")
            con.unregister("empty_table")


def sql_objects(sql_dir: Path = SQL_DIR) -> list[SqlFile]:
    """Every macro, view and derived table of ``sql_dir``, each after what it reads; an error
    when there is no view, so a broken install fails instead of publishing tables alone."""
    from liger_warehouse.model.tables import STORED

    files = load_order(sql_dir, set(STORED))
    if not any(f.kind == "views" for f in files):
        raise MissingViews(f"no analytic views (*.sql) in {sql_dir}: this installation lacks sql/; reinstall it")
    return files


def create_sql_objects(con: duckdb.DuckDBPyConnection, sql_dir: Path = SQL_DIR, derived_only: bool = False) -> Created:
    """Each object of ``sql/`` in load order; the first that fails is the cause, and is named.
    ``derived_only``: the derived tables alone, when the catalog's macros and views are this
    code's already (``sql_current``): they hold no data, so new rows leave them as they are."""
    files = sql_objects(sql_dir)
    made = [f for f in files if f.kind == "derived" or not derived_only]
    derived = [f for f in made if f.kind == "derived"]
    with _built_in_memory(con, derived, files):
        for file in made:
            _create(con, file, sql_dir)
    created = Created([f.name for f in derived], [f.name for f in made if f.kind != "derived"])
    if not derived_only:
        con.execute(
            f"create or replace view {BUILT_FROM} as select '{sql_version(sql_dir)}' as sql_version, "
            f"{_schema_version()} as schema_version"
        )
    return created


def create_derived_reading(con: duckdb.DuckDBPyConnection, table: str, sql_dir: Path = SQL_DIR) -> list[str]:
    """Recreate the derived tables that read ``table``, directly or through other objects (a
    triage write recreates what reads its table): the others stay as the last publish left them."""
    files = sql_objects(sql_dir)
    reading = {table}
    for file in files:  # load order: what a file reads comes before it
        if file.reads & reading:
            reading.add(file.name)
    recreated = [f for f in files if f.kind == "derived" and f.name in reading]
    with _built_in_memory(con, recreated, files):
        for file in recreated:
            _create(con, file, sql_dir)
    return [f.name for f in recreated]


@contextmanager
def _built_in_memory(con: duckdb.DuckDBPyConnection, derived: list[SqlFile], files: list[SqlFile]) -> Iterator[None]:
    """Copy the stored tables ``derived`` reads into temporary tables, which shadow the lake's for
    this connection; after the block (which creates ``derived`` as temporary tables), copy those
    into the lake and drop every temporary table, so later statements read and write the lake.
    An error in the block leaves them: the caller's transaction is then rolled back whole."""
    stored = stage_stored_reads(con, derived, files)
    yield
    for file in derived:
        copy_into_lake(con, file.name)
    for name in [*stored, *(f.name for f in derived)]:
        con.execute(f"drop table temp.main.{name}")


def stage_stored_reads(con: duckdb.DuckDBPyConnection, derived: list[SqlFile], files: list[SqlFile]) -> list[str]:
    """Copy the stored tables ``derived`` reads, directly or through views and macros, into
    temporary tables of the same names; returns their names."""
    from liger_warehouse.model.tables import STORED

    read: set[str] = set()
    for file in reversed(files):  # load order reversed: a file comes before what it reads
        # A derived table not rebuilt here is read as the lake holds it, not through its reads.
        if file in derived or (file.name in read and file.kind != "derived"):
            read |= file.reads
    stored = sorted(read & set(STORED))
    for name in stored:
        _execute(con, f"create temp table {name} as from {ALIAS}.main.{name}", f"copying {name} out of the lake")
    return stored


def derived_statement(file: SqlFile) -> str:
    """The statement that builds a derived table, as a temporary table."""
    return f"create temp table {file.name} as\n{file.sql.rstrip().rstrip(';')}"


def copy_into_lake(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Replace the lake's ``table`` with the temporary table of that name."""
    statement = f"create or replace table {ALIAS}.main.{table} as from temp.main.{table}"
    _execute(con, statement, f"copying {table} into the lake")


def _create(con: duckdb.DuckDBPyConnection, file: SqlFile, sql_dir: Path) -> None:
    _execute(con, derived_statement(file) if file.kind == "derived" else file.sql, file.label(sql_dir))


def _execute(con: duckdb.DuckDBPyConnection, statement: str, what: str) -> None:
    """``statement``; DuckDB's error prefixed with ``what`` was being done (a file, a copy)."""
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise RuntimeError(f"{what}: {exc}") from exc


def sql_current(con: duckdb.DuckDBPyConnection, sql_dir: Path = SQL_DIR) -> bool:
    """Whether the catalog's objects were created from this code's ``sql/`` and schema version."""
    try:
        row = con.execute(f"select sql_version, schema_version from {BUILT_FROM}").fetchone()
    except duckdb.CatalogException:
        return False
    return row == (sql_version(sql_dir), _schema_version())


@cache
def sql_version(sql_dir: Path = SQL_DIR) -> str:
    """A digest of every file of ``sql_dir``: what the catalog's objects were created from."""
    texts = [p.read_text() for p in sorted(sql_dir.rglob("*.sql"))]
    return sha256("\0".join(texts).encode()).hexdigest()[:16]


def _schema_version() -> int:
    from liger_warehouse.model.tables import SCHEMA_VERSION

    return SCHEMA_VERSION
