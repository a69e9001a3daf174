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
streams the points, merge-joins them with the prior state and writes the tables.

Cost: the points are computed by DuckDB over the generation's Parquet parts with a memory
limit (``MEMORY_LIMIT``) and a local spill directory, streamed in Arrow batches ordered by
series, and analysed one series at a time; the prior state is merge-joined from a second
ordered stream. Memory holds DuckDB's buffers, one series and the output (a row per change
point and per series), never the history. What stays proportional to the history is the
scan and sort of the gh-pages results, the digest of every point, Otava's final t-tests and
merge over every weak change point of a resumed series (both need the whole series), and
the segment medians around its change points.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field

import duckdb
import polars as pl
import pyarrow as pa

from liger_warehouse.analysis.otava_split import (
    SeriesState,
    analyze,
    method,
)
from liger_warehouse.analysis.point_stream import (
    STATE,
    Join,
    Series,
    points_sql,
    quote,
    run_table,
    same_layout,
    series_of,
    state_sql,
    states_of,
)
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.store.generations import Generation, GenerationStore, Part

TABLE = "fact_change_point"
# DuckDB computes the points; past this much memory its sort spills to a local directory.
MEMORY_LIMIT = "512MB"
BATCH_ROWS = 65_536
# Output rows held as Python objects before they become Arrow (a state row holds its weak points).
_FLUSH_ROWS = 10_000


@dataclass
class Counts:
    series: int = 0
    resumed: int = 0
    unchanged: int = 0
    from_scratch: int = 0
    points: int = 0

    def as_metadata(self) -> dict[str, int]:
        return {
            "series": self.series,
            "series_resumed": self.resumed,
            "series_unchanged": self.unchanged,
            "series_from_scratch": self.from_scratch,
            "points": self.points,
        }


@dataclass
class _Output:
    """Rows of fact_change_point and change_point_state, kept as compact Arrow batches."""

    revisions: list[str]
    label: str = ""
    rows: list[dict] = field(default_factory=list)
    states: list[dict] = field(default_factory=list)
    tables: dict[str, list[pa.Table]] = field(default_factory=lambda: {TABLE: [], STATE: []})
    counts: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        self.label = self.label or method()

    def add(self, s: Series, prior: SeriesState | None) -> None:
        state, how = analyze(s.seqs, s.values, prior)
        self.counts.series += 1
        self.counts.points += len(s.values)
        setattr(self.counts, how, getattr(self.counts, how) + 1)
        if state.found:
            values = s.values.tolist()
            bounds = [0, *(i for i, _ in state.found), len(values)]
            for n, (index, pvalue) in enumerate(state.found):
                before = values[bounds[n] : bounds[n + 1]]
                after = values[bounds[n + 1] : bounds[n + 2]]
                self.rows.append(
                    {
                        "series_digest": s.digest,
                        "revision_digest": self.revisions[s.rids[index]],
                        "previous_revision_digest": self.revisions[s.rids[index - 1]],
                        "point_index": index,
                        "points": len(values),
                        "before_points": len(before),
                        "after_points": len(after),
                        "before_median": statistics.median(before),
                        "after_median": statistics.median(after),
                        "pvalue": pvalue,
                        "method": self.label,
                    }
                )
        self.states.append(
            {
                "series_digest": s.digest,
                "points": state.points,
                "last_seq": state.last_seq,
                "prefix_digest": state.prefix_digest,
                "resume_index": state.resume_index,
                "weak_change_points": [
                    {
                        "index": w.index,
                        "qhat": w.qhat,
                        "left": w.left,
                        "right": w.right,
                        "mean_1": w.stats.mean_1,
                        "mean_2": w.stats.mean_2,
                        "std_1": w.stats.std_1,
                        "std_2": w.stats.std_2,
                        "pvalue": w.stats.pvalue,
                    }
                    for w in state.weak
                ],
                "change_points": [{"index": i, "pvalue": p} for i, p in state.found],
                "method": self.label,
            }
        )
        if len(self.rows) >= _FLUSH_ROWS or len(self.states) >= _FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        for table, rows in ((TABLE, self.rows), (STATE, self.states)):
            if rows:
                self.tables[table].append(pa.Table.from_pylist(rows, schema=SCHEMAS[table]))
                rows.clear()

    def result(self) -> dict[str, pa.Table]:
        """Both tables in series order (the output is small: a row per change point and one
        per series, not per result)."""
        self.flush()
        out = {}
        for name, parts in self.tables.items():
            table = pa.concat_tables(parts) if parts else SCHEMAS[name].empty_table()
            keys = [("series_digest", "ascending")] + ([("point_index", "ascending")] if name == TABLE else [])
            out[name] = table.sort_by(keys).combine_chunks()
        return out


def _run(
    con: duckdb.DuckDBPyConnection, results: str, revisions: pa.Table, state: str | pa.Table | None
) -> tuple[dict[str, pa.Table], Counts]:
    """Both tables from ``results`` (a relation over fact_result) and the prior ``state`` (a
    relation or table of change_point_state; None for none)."""
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
    out = _Output(revisions=runs.column("revision_digest").to_pylist())
    join = Join(states_of(prior))
    for series in series_of(con.sql(points_sql(results)).to_arrow_reader(BATCH_ROWS)):
        out.add(series, join.get(series.key))
    return out.result(), out.counts


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
    results: pl.DataFrame, revisions: pl.DataFrame, state: pa.Table | None = None
) -> tuple[pa.Table, pa.Table, Counts]:
    """``fact_change_point`` and ``change_point_state`` of one generation, resuming each series
    from ``state`` (the previous ``change_point_state``) where it can."""
    with duckdb.connect() as con:
        con.register("cp_results", results.to_arrow())
        tables, counts = _run(con, "cp_results", revisions.to_arrow(), state)
    return tables[TABLE], tables[STATE], counts


def compute(results: pl.DataFrame, revisions: pl.DataFrame) -> pa.Table:
    """The whole ``fact_change_point`` table of one generation, from scratch."""
    return compute_with_state(results, revisions)[0]


# --- The generation -------------------------------------------------------------------------


def _parquet(uris: list[str]) -> str:
    return "read_parquet([" + ", ".join(quote(u) for u in uris) + "])"


def prior_state_parts(gens: GenerationStore, gen: Generation) -> list[Part]:
    """The change_point_state parts of the generation ``gen`` is built on (none before the
    state existed)."""
    if not gen.parent:
        return []
    try:
        return gens.load(gen.parent).parts(STATE)
    except FileNotFoundError:
        return []


def add_to_generation(gens: GenerationStore, gen: Generation) -> tuple[dict[str, Part], Counts]:
    """Compute the change points of staged generation ``gen`` and re-stage it with them and
    their state (``GenerationStore.restage``: refused once ``gen`` is published or superseded).

    The parts are named by their content, so a refresh that changes no gh-pages run writes no
    new file and the new generation references the same parts as the last one.
    """
    from liger_warehouse.serve.database import cache_dir, open_duckdb

    scratch_root = cache_dir() / "duckdb-spill"
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="change-points-", dir=scratch_root)
    try:
        config = {"memory_limit": MEMORY_LIMIT, "temp_directory": scratch, "preserve_insertion_order": "false"}
        con = open_duckdb(gens.storage, config=config)
        try:
            revisions = gens.read_table(gen, "dim_upstream_revision", ["revision_digest", "seq"])
            results = gens.part_uris(gen, "fact_result")
            state = [gens.storage.uri(p.file) for p in prior_state_parts(gens, gen)]
            if results:
                tables, counts = _run(con, _parquet(results), revisions, _parquet(state) if state else None)
            else:
                tables, counts = {name: SCHEMAS[name].empty_table() for name in (TABLE, STATE)}, Counts()
        finally:
            con.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    parts = {name: gens.write_content_part(name, data) for name, data in tables.items()}
    for name, part in parts.items():
        gen.tables[name] = [part]
    gens.restage(gen)
    return parts, counts
