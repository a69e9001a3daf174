"""Derived tables written by SQL models: one ``select`` per table in ``sql/derived/``.

What the common questions need (each series and its sweep, the builds, the points that stand
for a series in a run or a build, the steps between them, the speedup pairs, each series' noise)
is computed once when a generation is staged, from the staged facts, and published with them as
Parquet: the views read these tables instead of deriving them per query. Models run in
``SQL_MODELS`` order; each sees the staged tables, the analytic views of ``sql/`` and the models
before it.

A refresh derives what its new facts touch and carries the rest from the published generation
(``_Incremental``), with the same rows a derivation from scratch gives:

- ``fact_run_point`` has one part per gh-pages run and ``fact_speedup_pair`` one per source (a
  run, a main-branch CSV, an import), named by a digest of what the source's rows come from
  (its fact_result parts, its revisions, the releases of its commit, the SQL): a source whose
  inputs are unchanged keeps its part, a new or changed one gets a new part;
- ``dim_series`` adds the series of new fact_result parts that it lacks;
- ``fact_build_point`` re-derives the builds whose points changed (the builds of changed run
  parts, the versions of changed main-branch or imported rows) and carries the others;
- ``fact_build_step`` re-derives the pairs of consecutive builds with such a build on either side
  and carries the others (a pair's rows read only its two builds' points);
- ``fact_recent_point`` and ``fact_run_step`` have one part per gh-pages run (the recent levels
  at it, the steps into it), named by a digest chained over the run point parts of every run up
  to it: a new run adds a part, the others are carried;
- ``fact_series_spread`` re-derives the series of the sweeps whose steps changed (a sweep's
  spread reads every step of its series) and carries the others;
- ``dim_build``, ``fact_series_noise`` and ``fact_speedup_noise`` are derived whole (a series'
  noise is its spread shrunk toward pools over every series, so one new run moves them all, but
  that is a pass over one row per series).

The same model SQL runs in both cases, over views narrowed to the touched parts or builds.

At 10^7 results no table is held whole in Python, and no model runs over everything in one
query where that overflows DuckDB's memory limit: DuckDB sorts each table and streams it
(``model_rows.stream``) into parts written a row group at a time; ``fact_build_point`` and
``fact_build_step`` from scratch are derived a batch of builds at a time, gathered in a DuckDB
table that spills to disk, and the per-source and per-run tables a batch of sources or runs
(``run_batches``) at a time.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from hashlib import sha256
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.model_rows import (
    ORDER,
    derivation_version,
    derive,
    grouped,
    in_order,
    model_reads,
    model_sql,
    narrowed,
    stream,
)
from liger_warehouse.analysis.run_batches import run_batches, runs_reaching
from liger_warehouse.model.tables import SCHEMAS, SQL_MODELS, empty
from liger_warehouse.serve.database import SQL_DIR, create_views, open_duckdb, parts_select, table_view_sql
from liger_warehouse.store.generations import Generation, GenerationStore, Part

# Results per batch of builds when fact_build_point is derived from scratch: at 10^7 results
# the whole derivation in one query ran out of DuckDB's 1 GB limit, and so did batches of 2M.
BATCH_RESULTS = 500_000
# Derived tables with one part per source (a gh-pages run, a main-branch CSV, an import).
PER_SOURCE = ("fact_run_point", "fact_speedup_pair", "fact_recent_point", "fact_run_step")


def _digest(*values: object) -> str:
    return sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:32]


@dataclass
class _Incremental:
    """What the published generation ``prior`` already holds that ``gen`` can carry."""

    gens: GenerationStore
    gen: Generation
    prior: Generation | None
    new_files: list[Part] = field(default_factory=list)  # fact_result parts not in prior
    gone_files: list[Part] = field(default_factory=list)  # prior fact_result parts not in gen

    @classmethod
    def of(cls, gens: GenerationStore, gen: Generation, from_scratch: bool) -> _Incremental:
        prior = None if from_scratch or not gen.parent else gens.load(gen.parent)
        if prior is not None and not all(
            _carried(prior, name) for name in ("dim_series", "fact_build_point", "fact_build_step")
        ):
            prior = None  # published before these were derived this way: derive them whole
        if prior is not None and prior.schema_version != gen.schema_version:
            prior = None  # a migration gave the facts new digests
        sources = {p.key for p in gen.parts("fact_result")}
        # A source's part keeps every result it ever had (restated ones too), so a series
        # leaves the facts only with its source.
        if prior is not None and {p.key for p in prior.parts("fact_result")} - sources:
            prior = None
        held = {p.file for p in prior.parts("fact_result")} if prior else set()
        kept = {p.file for p in gen.parts("fact_result")}
        new = [p for p in gen.parts("fact_result") if p.file not in held]
        gone = [p for p in prior.parts("fact_result") if p.file not in kept] if prior else []
        return cls(gens, gen, prior, new, gone)

    def source_parts(self, con: duckdb.DuckDBPyConnection, table: str, sources: dict[str, _Source]) -> list[Part]:
        """One part of ``table`` per source of ``sources`` (each gh-pages run for the run points,
        every source for the speedup pairs: a model whose rows each read one source's rows),
        re-derived only where its inputs changed, a batch of sources at a time."""
        held = {(p.key, p.file): p for p in self.prior.parts(table)} if self.prior else {}
        files = {key: f"tables/{table}/{source.digest}.parquet" for key, source in sources.items()}
        parts = {key: held[(key, file)] for key, file in files.items() if (key, file) in held}
        results = Counter()
        for part in self.gen.parts("fact_result"):
            results[part.key] += part.rows
        for batch in map(set, _batches((key, results[key]) for key in sorted(sources) if key not in parts)):
            revisions = {revision for key in batch for revision in sources[key].revisions}
            views = {
                "fact_result": ([p for p in self.gen.parts("fact_result") if p.key in batch], ""),
                "fact_revision_member": ([p for p in self.gen.parts("fact_revision_member") if p.key in revisions], ""),
            }
            with narrowed(con, self.gen, views):
                parts |= self._keyed_parts(table, stream(con, table), batch, files)
        return [parts[key] for key in sorted(parts)]

    def run_parts(self, con: duckdb.DuckDBPyConnection, table: str, run_points: list[Part], reach: int) -> list[Part]:
        """One part of ``table`` per gh-pages run (``fact_run_step``: the steps into it,
        ``fact_recent_point``: the recent levels at it), whose rows read the run's points and
        those of up to ``reach`` runs before it per series. So a part is named by a digest chained
        over the run point parts of every run up to its run, in upstream's order: a new run at the
        end adds a part and carries the others; a changed run re-derives its part and those of
        every run after it. Derived a batch of runs at a time over the run points their rows need
        (``run_batches``)."""
        runs = con.execute(runs_reaching(reach)).fetchall()
        point_file = {p.key: p.file for p in run_points}
        files, chain = {}, derivation_version()
        for run, _, _ in runs:
            chain = _digest(chain, run, point_file[run])
            files[run] = f"tables/{table}/{chain}.parquet"
        held = {(p.key, p.file): p for p in self.prior.parts(table)} if self.prior else {}
        parts = {run: held[(run, file)] for run, file in files.items() if (run, file) in held}
        source = model_sql(table).strip().removesuffix(";")
        key = ORDER[table][0]
        for heads, needed in run_batches(row for row in runs if row[0] not in parts):
            con.register("head_run", pa.table({"run": pa.array(sorted(heads), pa.string())}))
            views = {
                "fact_run_point": ([p for p in run_points if p.key in needed], ""),
                # decompose_points reads only the 'run' sides of side_points
                "fact_recent_point": ([], ""),
                "fact_build_point": ([], ""),
            }
            with narrowed(con, self.gen, views):
                rows = stream(con, table, f"select * from ({source}\n) where {key} in (select run from head_run)")
                parts |= self._keyed_parts(table, rows, heads, files)
        return [parts[run] for run in sorted(parts)]

    def _keyed_parts(
        self, table: str, rows: pa.RecordBatchReader, keys: set[str], files: dict[str, str]
    ) -> dict[str, Part]:
        """A part of ``table`` per key of ``keys`` (a source, a run), written to its file of
        ``files``, from ``rows`` sorted by the key (``ORDER``); a key without rows (a source
        without a pair, a run without a step) gets an empty part, so it is not derived again."""
        parts = {
            key: self.gens.write_part(table, key, Path(files[key]).stem, part)
            for key, part in grouped(rows, ORDER[table][0])
        }
        empty_part = empty(table)
        return parts | {
            key: self.gens.write_part(table, key, Path(files[key]).stem, empty_part) for key in keys - parts.keys()
        }

    def series(self, con: duckdb.DuckDBPyConnection) -> list[Part]:
        """The published series and those of the new fact_result parts that it lacks."""
        if self.prior is None:
            return [self.content_part("dim_series", stream(con, "dim_series"))]
        if not self.new_files:
            return self.prior.parts("dim_series")
        held = self.gens.read_table(self.prior, "dim_series").cast(SCHEMAS["dim_series"])
        with narrowed(con, self.gen, {"fact_result": (self.new_files, "")}):
            found = derive(con, "dim_series")
        added = found.filter(pc.invert(pc.is_in(found["series_digest"], held["series_digest"])))
        return [self.content_part("dim_series", in_order("dim_series", pa.concat_tables([held, added])))]

    def series_spreads(self, con: duckdb.DuckDBPyConnection, run_steps: list[Part]) -> list[Part]:
        """The series of the sweeps whose run steps changed, or that have a series new to the
        table, re-derived (a sweep's spread reads every step of its series); the others carried."""
        if self.prior is None:
            return [self.content_part("fact_series_spread", stream(con, "fact_series_spread"))]
        before = {p.file: p for p in self.prior.parts("fact_run_step")}
        after = {p.file: p for p in run_steps}
        changed = [p for f, p in after.items() if f not in before] + [p for f, p in before.items() if f not in after]
        con.register("changed_step", self.gens.read_parts("fact_run_step", changed, ["sweep_key"]))
        held = parts_select("fact_series_spread", self.prior.parts("fact_series_spread"))
        con.execute(f"create or replace temp table series_spread_rows as {held}")
        con.execute(
            "create or replace temp table touched_sweep as select sweep_key from changed_step union "
            "select sweep_key from dim_series anti join series_spread_rows using (series_digest)"
        )
        in_touched = "sweep_key in (select sweep_key from touched_sweep)"
        con.execute(f"delete from series_spread_rows where {in_touched}")
        try:
            views = {"fact_run_step": (run_steps, in_touched), "dim_series": (self.gen.parts("dim_series"), in_touched)}
            with narrowed(con, self.gen, views):
                con.execute(f"insert into series_spread_rows by name {model_sql('fact_series_spread')}")
            rows = stream(con, "fact_series_spread", "select * from series_spread_rows")
            return [self.content_part("fact_series_spread", rows)]
        finally:
            con.execute("drop table series_spread_rows")
            con.execute("drop table touched_sweep")

    def build_points(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """The builds whose points changed re-derived; the other builds' rows carried. From
        scratch, every build, a batch of builds at a time: the model's medians and source lists
        hold all of a group's points, which at 10^7 results overflow DuckDB's memory limit. The
        rows gather in a DuckDB table (which spills past the limit), not in Python."""
        if self.prior is None:
            held, touched, batches = [], pa.array([], pa.string()), list(_build_batches(con))
        else:
            touched = self._touched_builds(run_points)
            if not len(touched):
                return self.prior.parts("fact_build_point")
            held, batches = self.prior.parts("fact_build_point"), [touched]
        con.register("touched_build", pa.table({"build": touched}))
        con.execute(
            "create or replace temp table build_point_rows as select * from "
            f"({parts_select('fact_build_point', held)}) where build not in (select build from touched_build)"
        )
        try:
            for builds in batches:
                self._derive_builds(con, run_points, builds)
            rows = stream(con, "fact_build_point", "select * from build_point_rows")
            return [self.content_part("fact_build_point", rows)]
        finally:
            con.execute("drop table build_point_rows")

    def _derive_builds(self, con: duckdb.DuckDBPyConnection, run_points: list[Part], builds: pa.Array) -> None:
        """Adds fact_build_point's rows of ``builds`` to ``build_point_rows``: the model over
        views narrowed to their points."""
        con.register("touched_build", pa.table({"build": builds}))
        views = {
            "fact_run_point": (run_points, "build in (select build from touched_build)"),
            # A main-branch or imported row stands for its version's release build.
            "fact_result": (
                self.gen.parts("fact_result"),
                "source <> 'gh-pages' and liger_version in (select build from touched_build)",
            ),
        }
        source = model_sql("fact_build_point").strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            con.execute(
                f"insert into build_point_rows by name select * from ({source}\n) "
                "where build in (select build from touched_build)"
            )

    def build_steps(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """The pairs of consecutive builds with a touched build on either side re-derived (a new
        build makes new pairs, and is touched); the other pairs' rows carried while they are still
        consecutive for some series. From scratch, a batch of head builds at a time, as
        fact_build_point. The builds' order (``series_builds``, a window over every build point)
        is computed once; each batch decomposes over the points of its pairs' builds only, and
        the rows gather in a DuckDB table, not in Python."""
        con.execute("create or replace temp table series_build_rows as select * from series_builds")
        con.execute("create or replace view series_builds as select * from series_build_rows")
        steps = con.sql(
            "select distinct prev_build, build from series_build_rows where prev_build is not null"
        ).to_arrow_table()
        if self.prior is None:
            held, batches = [], list(_build_batches(con))
        else:
            touched = self._touched_builds(run_points)
            redo = pc.or_(pc.is_in(steps["prev_build"], touched), pc.is_in(steps["build"], touched))
            held, batches = self.prior.parts("fact_build_step"), [pc.unique(steps.filter(redo)["build"])]
        con.register("build_step", steps)
        con.register("redone_head", pa.table({"build": pa.chunked_array(batches, pa.string())}))
        con.execute(
            "create or replace temp table build_step_rows as "
            f"select * from ({parts_select('fact_build_step', held)}) as s "
            "semi join build_step as w on s.base_build = w.prev_build and s.head_build = w.build "
            "where s.head_build not in (select build from redone_head)"
        )
        try:
            for heads in batches:
                self._derive_steps(con, heads)
            kept = con.execute("select count(*) from build_step_rows").fetchall()[0][0]
            if self.prior is not None and not len(batches[0]) and kept == sum(p.rows for p in held):
                return held  # no pair came, went or changed
            return [
                self.content_part("fact_build_step", stream(con, "fact_build_step", "select * from build_step_rows"))
            ]
        finally:
            con.execute("drop table build_step_rows")
            con.execute((SQL_DIR / "views" / "series_builds.sql").read_text())
            con.execute("drop table series_build_rows")

    def _derive_steps(self, con: duckdb.DuckDBPyConnection, heads: pa.Array) -> None:
        """Adds fact_build_step's rows of the pairs into ``heads`` to ``build_step_rows``: the
        model over build points narrowed to those pairs' builds (a pair's decomposition reads
        only its two builds' points, so pairs with a build left out give no rows)."""
        con.register("touched_build", pa.table({"build": heads}))
        builds = (
            "build in (select build from touched_build union "
            "select prev_build from build_step where build in (select build from touched_build))"
        )
        views = {
            "fact_build_point": (self.gen.parts("fact_build_point"), builds),
            "fact_run_point": ([], ""),  # decompose_points reads only the 'build' sides
            "fact_recent_point": ([], ""),
        }
        source = model_sql("fact_build_step").strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            con.execute(
                f"insert into build_step_rows by name select * from ({source}\n) "
                "where head_build in (select build from touched_build)"
            )

    def _touched_builds(self, run_points: list[Part]) -> pa.Array:
        """Builds of run parts that came or went, and the versions (their release builds) of
        main-branch or imported rows in fact_result parts that came or went."""
        before = {p.file: p for p in self.prior.parts("fact_run_point")}
        after = {p.file: p for p in run_points}
        changed_runs = [p for f, p in after.items() if f not in before] + [
            p for f, p in before.items() if f not in after
        ]
        builds = self.gens.read_parts("fact_run_point", changed_runs, ["build"])["build"]
        rows = self.gens.read_parts("fact_result", self.new_files + self.gone_files, ["source", "liger_version"])
        versions = rows.filter(pc.not_equal(rows["source"], "gh-pages"))["liger_version"]
        return pa.array(sorted(set(builds.to_pylist()) | set(versions.to_pylist())), pa.string())

    def content_part(self, table: str, data: pa.Table | pa.RecordBatchReader) -> Part:
        # Keyed by the derivation version: a later refresh carries it only under the same SQL.
        return replace(self.gens.write_content_part(table, data), key=derivation_version())


def _build_batches(con: duckdb.DuckDBPyConnection) -> Iterator[pa.Array]:
    """Every build of ``dim_build`` in release order, in ``_batches``."""
    builds = con.execute("select build, results from dim_build order by build_rank").fetchall()
    return (pa.array(batch, pa.string()) for batch in _batches(builds))


def _batches(sized: Iterable[tuple[str, int]]) -> Iterator[list[str]]:
    """Names in order, in batches of at most ``BATCH_RESULTS`` results (a name with more is a
    batch of its own)."""
    batch: list[str] = []
    held = 0
    for name, results in sized:
        if batch and held + results > BATCH_RESULTS:
            yield batch
            batch, held = [], 0
        batch.append(name)
        held += results
    if batch:
        yield batch


def _carried(prior: Generation, table: str) -> bool:
    parts = prior.parts(table)
    return len(parts) == 1 and parts[0].key == derivation_version()


def derived_current(gen: Generation) -> bool:
    """Whether ``gen``'s derived tables were derived by this code's SQL. After an upgrade that
    changed ``sql/``, they were not: the next refresh stages a generation to derive them again,
    even when upstream holds nothing new. (The per-source tables' parts are keyed by source; the SQL is
    in their names, and they are derived with the others.)"""
    return all(_carried(gen, name) for name in SQL_MODELS if name not in PER_SOURCE)


@dataclass(frozen=True)
class _Source:
    """A source of fact_result (a gh-pages run, a main-branch CSV, an import) and what the rows
    derived from it alone come from."""

    source: str
    revisions: frozenset[str]
    digest: str  # of its fact_result parts, its revisions and their places, its releases, the SQL


def _sources(con: duckdb.DuckDBPyConnection, gen: Generation) -> dict[str, _Source]:
    """Each source of ``gen``'s fact_result parts. Its digest names its parts of the per-source
    derived tables: the source's fact_result parts, its revisions and their places, the releases
    of its commit (a release run makes the other runs of its commit release runs), and the SQL."""
    revisions = con.execute(
        """
        select
            r.source_key,
            any_value(r.source),
            list([r.revision_digest, r.seq::varchar] order by r.seq, r.revision_digest) as revisions,
            list_sort(list(distinct rc.release_version) filter (where rc.release_version is not null)) as releases
        from dim_upstream_revision as r
        left join (
            select distinct split_part(run, '-', 1) as run_commit, release_version
            from dim_upstream_revision
            where release_version is not null
        ) as rc on rc.run_commit = split_part(r.run, '-', 1)
        group by r.source_key
        """
    ).fetchall()
    files: dict[str, list[str]] = {}
    for part in gen.parts("fact_result"):
        files.setdefault(part.key, []).append(part.file)
    held = {key: (source, revs, releases) for key, source, revs, releases in revisions}
    if missing := sorted(set(files) - set(held)):
        raise ValueError(f"fact_result parts of sources without revisions in dim_upstream_revision: {missing}")
    return {
        key: _Source(
            source,
            frozenset(digest for digest, _ in revs),
            _digest(derivation_version(), key, sorted(files[key]), revs, releases),
        )
        for key, (source, revs, releases) in held.items()
        if key in files
    }


def add_to_generation(
    gens: GenerationStore, gen: Generation, from_scratch: bool = False, seconds: dict[str, float] | None = None
) -> dict[str, list[Part]]:
    """Run every SQL model over staged generation ``gen`` and re-stage it with their tables
    (``GenerationStore.restage``: refused once ``gen`` is published or superseded).

    What the published parent already derived is carried where its inputs are unchanged
    (``from_scratch`` derives everything anew; the rows are the same either way). ``seconds``,
    when given, receives how long each table took (derived or carried)."""
    incremental = _Incremental.of(gens, gen, from_scratch)
    tables: dict[str, list[Part]] = {}
    with open_duckdb(gens.storage) as con:
        create_views(con, gen, reads=model_reads())
        sources = _sources(con, gen)
        for name in SQL_MODELS:
            started = time.perf_counter()
            if name == "fact_run_point":
                gh_pages = {key: source for key, source in sources.items() if source.source == "gh-pages"}
                parts = incremental.source_parts(con, name, gh_pages)
            elif name == "fact_speedup_pair":
                parts = incremental.source_parts(con, name, sources)
            elif name == "dim_series":
                parts = incremental.series(con)
            elif name == "fact_build_point":
                parts = incremental.build_points(con, tables["fact_run_point"])
            elif name == "fact_build_step":
                parts = incremental.build_steps(con, tables["fact_run_point"])
            elif name == "fact_recent_point":
                recent = con.execute("select verdict_rule().recent_runs").fetchone()[0]
                parts = incremental.run_parts(con, name, tables["fact_run_point"], recent - 1)
            elif name == "fact_run_step":
                parts = incremental.run_parts(con, name, tables["fact_run_point"], 1)
            elif name == "fact_series_spread":
                parts = incremental.series_spreads(con, tables["fact_run_step"])
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
