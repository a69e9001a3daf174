"""How the rows of a SQL model of ``sql/derived/`` come out of DuckDB: the model's text, the
version every derived row depends on, and its rows sorted by DuckDB and streamed in Arrow
batches (a table of 10^7 rows is never held whole in Python), over views that can be narrowed
to some parts. ``derived`` decides what to derive and what to carry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from hashlib import sha256
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.model.derived_order import ORDER
from liger_warehouse.model.tables import SCHEMAS, SQL_MODELS
from liger_warehouse.serve.database import SQL_DIR, analytic_view_files
from liger_warehouse.serve.sql_files import SqlFile, declared_reads, read_by
from liger_warehouse.serve.table_views import parts_select, table_view_sql
from liger_warehouse.store.generations import Generation, Part

MODEL_DIR = SQL_DIR / "derived"
# Rows per Arrow batch streamed from DuckDB.
STREAM_ROWS = 65_536
# Raised when a fix to how a refresh narrows a model's inputs changes the rows a part's name
# stands for while the SQL stays the same: every warehouse then derives its tables again, instead
# of carrying (or, from scratch, reusing by name) a part derived wrong. 2: a relabelled run's
# speedup steps reached back to its own published steps (``run_batches.stepped_pairing_runs``).
DERIVATION_REVISION = 2


def model_sql(name: str, model_dir: Path = MODEL_DIR) -> str:
    return (model_dir / f"{name}.sql").read_text()


@cache
def model_reads(sql_dir: Path = SQL_DIR) -> set[str]:
    """What the models read (their ``-- reads:`` lines): the only views a derivation creates."""
    return {name for model in SQL_MODELS for name in declared_reads(model_sql(model, sql_dir / "derived")) or ()}


def model_inputs(sql_dir: Path = SQL_DIR) -> list[SqlFile]:
    """The macros and views the models read, directly or through another."""
    return read_by(analytic_view_files(sql_dir), model_reads(sql_dir))


@cache
def derivation_version(sql_dir: Path = SQL_DIR) -> str:
    """What every derived row also depends on: the models' SQL, that of ``model_inputs``, the
    derived schemas and ``DERIVATION_REVISION``. A part derived under another version is never
    carried. The rest of ``sql/`` (the views people query and their macros) can change without
    deriving anything again: a refresh rebuilds the views alone (``rebuild_if_stale``)."""
    texts = [str(DERIVATION_REVISION)] + [model_sql(name, sql_dir / "derived") for name in SQL_MODELS]
    texts += [file.sql for file in model_inputs(sql_dir)]
    texts += [str(SCHEMAS[name]) for name in SQL_MODELS]
    return sha256("\0".join(texts).encode()).hexdigest()[:16]


def stream(con: duckdb.DuckDBPyConnection, name: str, rows_sql: str | None = None) -> pa.RecordBatchReader:
    """The rows of model ``name`` (or of ``rows_sql``, which has its columns) in ``ORDER``,
    sorted by DuckDB and streamed: a derived table of 10^7 rows is never held whole in Python."""
    columns = ", ".join(f'"{column}"' for column in SCHEMAS[name].names)
    source = rows_sql or model_sql(name).strip().removesuffix(";")
    ordered = f"select {columns} from ({source}\n) order by {', '.join(ORDER[name])}"
    return con.sql(ordered).to_arrow_reader(STREAM_ROWS)


def derive(con: duckdb.DuckDBPyConnection, name: str) -> pa.Table:
    """Model ``name``'s rows whole, in ``ORDER`` (for the small tables a refresh adds to)."""
    return stream(con, name).read_all().cast(SCHEMAS[name]).combine_chunks()


@contextmanager
def narrowed(
    con: duckdb.DuckDBPyConnection, gen: Generation, views: dict[str, tuple[list[Part], str]]
) -> Iterator[None]:
    """Within the block, each table of ``views`` on ``con`` reads only the given parts (and rows
    matching the given condition, when not empty); after it, all of ``gen``'s parts again."""
    for table, (parts, where) in views.items():
        select = parts_select(table, parts)
        con.execute(f"create or replace view {table} as select * from ({select}) where {where or 'true'}")
    try:
        yield
    finally:
        for table in views:
            con.execute(table_view_sql(gen, table))


def in_order(name: str, data: pa.Table) -> pa.Table:
    """In ``ORDER``, in one chunk: the same rows are the same bytes however they were put together."""
    return data.sort_by([(column, "ascending") for column in ORDER[name]]).combine_chunks()


def grouped(batches: Iterable[pa.RecordBatch], column: str) -> Iterator[tuple[object, pa.Table]]:
    """Rows sorted by ``column``, one table (in one chunk) per value of it."""
    held: list[pa.RecordBatch] = []
    key = None
    for batch in batches:
        offset = 0
        for count in pc.value_counts(batch[column]).to_pylist():  # in order of appearance
            rows = batch.slice(offset, count["counts"])
            offset += count["counts"]
            if held and count["values"] != key:
                yield key, pa.Table.from_batches(held).combine_chunks()
                held = []
            key = count["values"]
            held.append(rows)
    if held:
        yield key, pa.Table.from_batches(held).combine_chunks()
