"""Change points in the gh-pages run history of every series, by Apache Otava's e-divisive.

A series (kernel, mode, provider, metric, GPU, workload) gets one point per gh-pages run, in
run order (``dim_upstream_revision.seq``, the order of upstream's ``commits.txt``); the point
is that run's p50, and when a run holds several results of the series the most recently
observed one stands for it (the smallest result digest breaks ties). Main-branch results are
left out: a main-branch CSV is overwritten piecemeal on whatever host re-ran a kernel, so its
revisions are not a time series.

Detection is Apache Otava's ``compute_change_points`` (Fleming et al., "Hunter: Using Change
Point Detection to Hunt for Performance Regressions", ICPE 2023): e-divisive means (Matteson
& James 2014) proposes splits in sliding windows, then a merge step keeps only the change
points whose two-sided t-test p-value is below ``MAX_PVALUE`` and whose relative change in
mean exceeds ``MIN_MAGNITUDE``. Otava's own defaults are window 50 and p-value 0.001; the
5% magnitude floor matches the default regression threshold of the SQL views, so a level
shift smaller than what ``regressions`` would call a change is not reported either.

Incremental refresh: ``otava_split.py`` resumes Otava's split step per series; this module
streams the points, merge-joins them with the prior state and writes the tables, inside the
publishing transaction. Only the series whose gh-pages results this refresh wrote are streamed
(``update``'s ``touched``); every other series keeps its rows, which is what analysing it again
would give, since a series with the same points keeps its rows.

Cost: the points are computed by DuckDB over the lake's fact_result, streamed in Arrow batches ordered by
series; the prior state is merge-joined from a second ordered stream. The series go out in
batches of about ``BATCH_POINTS`` points to worker processes (``series_pool.py``: one per core
in a refresh, started with the run), each batch analysed one series at a time
(``series_rows.py``); the tables are the same whichever worker took a batch, since they are
sorted by series at the end. Memory holds DuckDB's buffers, a few batches per worker and the
output (a row per change point and per series), never the history. What stays proportional to
the history: the scan of fact_result that picks the touched series' results, then for each
touched series the sort and digest of all its points, Otava's final t-tests and merge over its
weak change points (both need the whole series; the t-tests of segments that did not change are
taken from the state), and the segment medians around its change points.
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.otava_method import method
from liger_warehouse.analysis.point_stream import (
    STATE,
    TABLE,
    Join,
    points_sql,
    prior_rows,
    run_table,
    same_layout,
    series_of,
    state_sql,
)
from liger_warehouse.analysis.series_batch import BATCH_POINTS, Counts, batches
from liger_warehouse.analysis.series_pool import SeriesPool, analyzed, series_pool
from liger_warehouse.model.tables import SCHEMAS

__all__ = ["Counts", "compute", "compute_with_state", "method", "run_points", "update"]

BATCH_ROWS = 65_536


def _tables(parts: dict[str, list[pa.Table]]) -> dict[str, pa.Table]:
    """Both tables in series order, whichever order the batches came back in (the output is
    small: a row per change point and one per series, not per result)."""
    out = {}
    for name, tables in parts.items():
        table = pa.concat_tables(tables) if tables else SCHEMAS[name].empty_table()
        keys = [("series_digest", "ascending")] + ([("point_index", "ascending")] if name == TABLE else [])
        out[name] = table.sort_by(keys).combine_chunks()
    return out


def _run(
    con: duckdb.DuckDBPyConnection,
    results: str,
    revisions: pa.Table,
    state: str | pa.Table | None,
    pool: SeriesPool | None = None,
    batch_points: int = BATCH_POINTS,
) -> tuple[dict[str, pa.Table], Counts]:
    """Both tables from ``results`` (a relation over fact_result) and the prior ``state`` (a
    relation or table of change_point_state; None for none), the series analysed on ``pool``
    (None: in this process) in batches of about ``batch_points`` points."""
    runs = run_table(revisions)
    con.register("cp_runs", runs)
    prior: Iterable[pa.RecordBatch] = []
    if state is not None:
        # A second cursor: its reader runs beside the one over the points.
        cursor = con.cursor()
        if isinstance(state, pa.Table):
            cursor.register("cp_state", state)
            state = "cp_state"
        if same_layout(cursor.sql(f"select * from {state} limit 0").to_arrow_table().schema):
            prior = cursor.sql(state_sql(state)).to_arrow_reader(BATCH_ROWS)
    series = series_of(con.sql(points_sql(results)).to_arrow_reader(BATCH_ROWS))
    work = batches(series, Join(prior_rows(prior)), batch_points)
    parts: dict[str, list[pa.Table]] = {TABLE: [], STATE: []}
    counts = Counts()
    for done in analyzed(work, runs.column("revision_digest").to_pylist(), pool):
        for name, table in done.tables.items():
            parts[name].append(table)
        counts.merge(done.counts)
    return _tables(parts), counts


# --- Pure entry points (Polars frames in, Arrow tables out) ---------------------------------


def run_points(results: pl.DataFrame, revisions: pl.DataFrame) -> pl.DataFrame:
    """One point per series and gh-pages run, in series and run order.

    ``results`` has fact_result's series_digest, source, first_revision_digest, observed_at,
    result_digest and p50; ``revisions`` has dim_upstream_revision's revision_digest and seq.
    """
    runs = run_table(revisions.to_arrow())
    with duckdb.connect() as con:
        con.register("cp_results", results.to_arrow())
        con.register("cp_runs", runs)
        rows = pl.from_arrow(con.sql(points_sql("cp_results")).to_arrow_table())
    points = rows.unique(["series_digest", "seq"], keep="first", maintain_order=True)
    digests = pl.Series("revision_digest", runs.column("revision_digest").to_pylist())
    return (
        points.with_columns(revision_digest=digests.gather(points["rid"]))
        .select("series_digest", "seq", "revision_digest", "p50")
        .sort("series_digest", "seq")
    )


def compute_with_state(
    results: pl.DataFrame,
    revisions: pl.DataFrame,
    state: pa.Table | None = None,
    workers: int = 1,
    batch_points: int = BATCH_POINTS,
) -> tuple[pa.Table, pa.Table, Counts]:
    """``fact_change_point`` and ``change_point_state`` of one history, resuming each series
    from ``state`` (the previous ``change_point_state``) where it can; the series analysed on
    ``workers`` processes, in batches of about ``batch_points`` points (series_pool.py)."""
    with duckdb.connect() as con, series_pool(workers) as pool:
        con.register("cp_results", results.to_arrow())
        tables, counts = _run(con, "cp_results", revisions.to_arrow(), state, pool, batch_points)
    return tables[TABLE], tables[STATE], counts


def compute(results: pl.DataFrame, revisions: pl.DataFrame) -> pa.Table:
    """The whole ``fact_change_point`` table of one history, from scratch."""
    return compute_with_state(results, revisions)[0]


# --- The lake -------------------------------------------------------------------------------


def prior_state(con: duckdb.DuckDBPyConnection) -> pa.Table | None:
    """``change_point_state`` as the lake holds it, when every row can be resumed from: in this
    code's layout and computed by this ``method()``."""
    state = con.sql(f"select * from {STATE}").to_arrow_table()
    if state.num_rows == 0 or not same_layout(state.schema):
        return None
    if pc.any(pc.not_equal(state["method"], method())).as_py():
        return None
    return state.cast(SCHEMAS[STATE])


def update(con: duckdb.DuckDBPyConnection, pool: SeriesPool | None = None, touched: set[str] | None = None) -> Counts:
    """Bring both tables in the lake of ``con`` (inside its transaction) up to date, each series
    resumed from its prior state where its points allow (on ``pool``'s workers; None: in this
    process). ``touched`` names the only series whose points may have changed; every other series
    keeps its rows, which is what analysing it again would give. None, or a prior state that
    cannot be resumed from, analyses every series."""
    revisions = con.sql("select revision_digest, seq from dim_upstream_revision").to_arrow_table()
    state = prior_state(con)
    where, results, kept = "true", "fact_result", (0, 0)
    if touched is not None and state is not None:
        con.register("cp_touched", pa.table({"series_digest": pa.array(sorted(touched), pa.string())}))
        where = "series_digest in (select series_digest from cp_touched)"
        results = f"(select * from fact_result where {where})"
        state = state.filter(pc.is_in(state["series_digest"], con.sql("from cp_touched").to_arrow_table()[0]))
        kept = con.execute(f"select count(*), coalesce(sum(points), 0) from {STATE} where not {where}").fetchone()
    if con.execute(f"select count(*) from {results}").fetchone()[0]:
        tables, counts = _run(con, results, revisions, state, pool)
    else:
        tables, counts = {name: SCHEMAS[name].empty_table() for name in (TABLE, STATE)}, Counts()
    counts.merge(Counts(series=kept[0], unchanged=kept[0], points=int(kept[1])))
    for name, table in tables.items():
        con.execute(f"delete from {name} where {where}")
        con.register("new_rows", table)
        con.execute(f"insert into {name} by name select * from new_rows")
        con.unregister("new_rows")
    return counts
