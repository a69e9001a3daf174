"""Derived tables written by SQL models: one ``select`` per table in ``sql/derived/``.

What the common questions need (each series and its sweep, the builds, the points that stand
for a series in a run or a build, the steps between them, the speedup pairs, each series' noise)
is computed once when a generation is staged, from the staged facts, and published with them as
Parquet: the views read these tables instead of deriving them per query. Models run in
``SQL_MODELS`` order; each sees the staged tables, the analytic views of ``sql/`` and the models
before it.

A refresh derives what its new facts touch and carries the rest from the published generation,
with the same rows a derivation from scratch gives (``liger_warehouse/analysis/incremental.py``
says what each table carries).
"""

from __future__ import annotations

import time

from liger_warehouse.analysis.incremental import Incremental
from liger_warehouse.analysis.model_rows import model_reads, stream
from liger_warehouse.analysis.part_inputs import source_inputs
from liger_warehouse.model.tables import SQL_MODELS
from liger_warehouse.serve.database import create_views, open_duckdb
from liger_warehouse.serve.table_views import table_view_sql
from liger_warehouse.store.generations import Generation, GenerationStore, Part


def add_to_generation(
    gens: GenerationStore, gen: Generation, from_scratch: bool = False, seconds: dict[str, float] | None = None
) -> dict[str, list[Part]]:
    """Run every SQL model over staged generation ``gen`` and re-stage it with their tables
    (``GenerationStore.restage``: refused once ``gen`` is published or superseded).

    What the published parent already derived is carried where its inputs are unchanged
    (``from_scratch`` derives everything anew; the rows are the same either way). A part named by
    its inputs whose file exists is that file either way: its name digests the inputs and
    ``derivation_version``, so a fix that changes its rows raises ``DERIVATION_REVISION``. ``seconds``,
    when given, receives how long each table took (derived or carried)."""
    incremental = Incremental.of(gens, gen, from_scratch)
    tables: dict[str, list[Part]] = {}
    with open_duckdb(gens.storage) as con:
        create_views(con, gen, reads=model_reads())
        sources = source_inputs(con, gen)
        for name in SQL_MODELS:
            started = time.perf_counter()
            if name == "fact_run_point":
                gh_pages = {key: source for key, source in sources.items() if source.source == "gh-pages"}
                parts = incremental.source_parts(con, name, gh_pages)
            elif name in ("fact_build_source", "fact_speedup_pair", "fact_restatement"):
                parts = incremental.source_parts(con, name, sources)
            elif name == "series_latest_runs":
                parts = incremental.latest_runs(con, tables["fact_run_point"])
            elif name == "dim_series":
                parts = incremental.series(con)
            elif name in ("fact_build_point", "fact_speedup_point"):
                parts = incremental.build_parts(con, name, tables["fact_run_point"])
            elif name == "fact_build_step":
                parts = incremental.build_steps(con, tables["fact_run_point"])
            elif name == "fact_recent_point":
                [(recent,)] = con.execute("select verdict_rule().recent_runs").fetchall()
                parts = incremental.run_parts(con, name, tables["fact_run_point"], recent - 1)
            elif name == "fact_run_step":
                parts = incremental.run_parts(con, name, tables["fact_run_point"], 1)
            elif name == "fact_series_spread":
                parts = incremental.series_spreads(con, tables["fact_run_step"])
            elif name == "fact_speedup_step":
                parts = incremental.speedup_steps(con, tables["fact_run_point"])
            elif name == "fact_speedup_spread":
                parts = incremental.speedup_spreads(con, tables["fact_speedup_step"])
            else:
                parts = [incremental.content_part(name, stream(con, name))]
            tables[name] = parts
            # The next models read this one as the staged generation will show it.
            gen.tables[name] = parts
            con.execute(table_view_sql(gen, name))
            if seconds is not None:
                seconds[name] = time.perf_counter() - started
    gens.restage(gen)
    return tables
