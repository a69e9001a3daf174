"""Readers' copies: the tables that readers scan whole, kept as one file sorted for them.

A derived table kept in parts by build or source (``fact_build_step``, ``fact_speedup_pair``,
``fact_speedup_point``) is what a refresh can re-derive a part at a time; but every part holds
every series, so a question on one kernel, GPU or baseline opens all of them (3,335 files at
10^7 results), and their digests, in no order, hardly compress. The copy holds the same rows in
one file, sorted by ``ORDER``: filters on its leading columns skip most of its row groups, and
the sorted digests compress about five times better.

The copy of a generation covers the parts it was written from. Readers read it less the rows
of the keys whose parts were replaced or removed since, plus the parts written since
(``table_views.readers_select``), so a refresh writes no copy until those add up
(``needs_rewrite``); a rewrite costs a sort of the whole table. Written before the generation
is published, and named in its manifest (``Generation.readers``): a reader sees the copy and
the parts of one generation or the other, never a mix.
"""

from __future__ import annotations

import time

from liger_warehouse.model.derived_order import ORDER as STABLE_ORDER
from liger_warehouse.serve.database import open_duckdb
from liger_warehouse.serve.table_views import parts_select
from liger_warehouse.store.generations import ROW_GROUP_ROWS, Generation, GenerationStore, Part, ReadersCopy

# Each table with a copy, and its sort. A speedup question reads one metric and baseline, so
# those lead. `fact_build_step` is read for the series of one kernel and GPU (the regressions
# view, the regressions command) or one pair of builds (a comparison): sorted by kernel and GPU,
# a filter on them skips the other kernels' row groups, and a series' rows stay together.
ORDER = {
    "fact_build_step": ("kernel", "gpu", "series_digest", "head_build", "base_build"),
    "fact_speedup_pair": ("metric", "baseline_provider", "liger_series_digest", "baseline_series_digest", "source_key"),
    "fact_speedup_point": ("metric", "baseline_provider", "liger_series_digest", "baseline_series_digest", "build"),
}
# A table in fewer parts than this is read as it is.
MIN_PARTS = 16
# The copy is written again when more parts than this are read beside it, or when the rows
# read beside it and the rows it holds for replaced or removed keys exceed this share of it.
MAX_PARTS_BESIDE = 32
MAX_SHARE_BESIDE = 0.25


def needs_rewrite(copy: ReadersCopy | None, parts: list[Part], order: tuple[str, ...]) -> bool:
    """Whether a table in ``parts`` (those with rows) needs its copy written, given the one it has
    and the ``order`` it should be in."""
    if copy is None or tuple(copy.order) != order:
        return True
    beside = copy.beside(parts)
    unread = sum(p.rows for p in [*beside, *copy.stale(parts)])
    return len(beside) > MAX_PARTS_BESIDE or unread > MAX_SHARE_BESIDE * copy.rows


def with_readers_copies(gens: GenerationStore, gen: Generation, parent: Generation) -> dict[str, float]:
    """Give staged generation ``gen`` the readers' copies of ``parent`` that still serve, and
    write those that need writing; returns the seconds each written copy took. The caller
    stages ``gen`` again."""
    written = {}
    for table, order in ORDER.items():
        parts = [p for p in gen.parts(table) if p.rows]
        copy = parent.readers.get(table)
        if len(parts) < MIN_PARTS:
            gen.readers.pop(table, None)
            continue
        if needs_rewrite(copy, parts, order):
            started = time.perf_counter()
            copy = write_copy(gens, table, parts, order)
            written[table] = time.perf_counter() - started
        gen.readers[table] = copy
    return written


def write_copy(gens: GenerationStore, table: str, parts: list[Part], order: tuple[str, ...]) -> ReadersCopy:
    """One file of the rows of ``parts``, sorted by ``order``, named by its content. Streamed:
    DuckDB sorts under its memory limit, spilling to disk, and a table of 10^7 rows is never
    held whole in Python."""
    # Ties broken by the table's stable order, so the same rows make the same file.
    columns = ", ".join(f'"{c}"' for c in [*order, *(c for c in STABLE_ORDER[table] if c not in order)])
    with open_duckdb(gens.storage) as con:
        rows = con.sql(f"{parts_select(table, parts)} order by {columns}").to_arrow_reader(ROW_GROUP_ROWS)
        part = gens.write_content_part(table, rows, folder="readers")
    expected = sum(p.rows for p in parts)
    if part.rows != expected:
        raise RuntimeError(f"the readers' copy of {table} holds {part.rows} rows, its {len(parts)} parts {expected}")
    return ReadersCopy(file=part.file, rows=part.rows, order=list(order), covers=parts)
