"""What a refresh derives of each derived table, and what it carries from the published
generation.

A refresh derives what its new facts touch and carries the rest from the published generation
with the same rows a derivation from scratch gives:

- ``fact_run_point`` has one part per gh-pages run, and ``fact_speedup_pair`` and
  ``fact_restatement`` one per source (a run, a main-branch CSV, an import), named by a digest
  of what the source's rows come from (its fact_result parts, its revisions and so their
  members, the releases of its commit, the SQL): a source whose inputs are unchanged keeps its
  part, a new or changed one gets a new part;
- ``dim_series`` adds the series of new fact_result parts that it lacks;
- ``fact_build_point`` has one part per build: it re-derives the builds whose points changed (the
  builds of changed run parts, the versions of changed main-branch or imported rows) and carries
  the others;
- ``fact_build_step`` has one part per head build: it re-derives the heads of pairs of
  consecutive builds with such a build on either side, or whose series' steps into them changed
  (a pair gained or lost a series, a build inserted before them renumbered their series' builds),
  and carries the others (a pair's rows read only its two builds' points and its series' order);
- ``fact_recent_point`` and ``fact_run_step`` have one part per gh-pages run (the recent levels
  at it, the steps into it), named by a digest chained over the run point parts of every run up
  to it: a new run adds a part, the others are carried;
- ``fact_series_spread`` re-derives the series of the sweeps whose steps changed (a sweep's
  spread reads every step of its series) and carries the others;
- ``fact_speedup_spread`` re-derives the pairings of two series that are both in run point parts
  that came or went (a pairing's spread reads only its two series' points) and carries the others;
- ``dim_build``, ``fact_series_noise`` and ``fact_speedup_noise`` are derived whole (a series'
  noise is its spread shrunk toward pools over every series, so one new run moves them all, but
  that is a pass over one row per series or pairing).

The same model SQL runs in both cases, over views narrowed to the touched parts or builds.

At 10^7 results no table is held whole in Python, and no model runs over everything in one
query where that overflows DuckDB's memory limit: DuckDB sorts each table and streams it
(``model_rows.stream``) into parts written a row group at a time; ``fact_build_point`` and
``fact_build_step`` are derived a batch of builds at a time, and the per-source and per-run
tables a batch of sources or runs (``run_batches``) at a time, each batch streamed into its parts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.build_order import APPENDED_SERIES_BUILDS, REDONE_HEADS, appended_builds
from liger_warehouse.analysis.model_rows import (
    derivation_version,
    derive,
    grouped,
    in_order,
    model_sql,
    narrowed,
    stream,
)
from liger_warehouse.analysis.part_inputs import (
    Source,
    build_batches,
    carried,
    chained_digests,
    earlier_layout,
    keyed_name,
    part_folder,
    sized_batches,
)
from liger_warehouse.analysis.run_batches import (
    RUN_SEQ,
    appended_latest,
    appended_reaching,
    run_batches,
    runs_reaching,
)
from liger_warehouse.model.derived_order import ORDER
from liger_warehouse.model.tables import SCHEMAS, empty
from liger_warehouse.serve.database import SQL_DIR
from liger_warehouse.serve.table_views import parts_select
from liger_warehouse.store.generations import Generation, GenerationStore, Part, part_file, parts_diff


@dataclass
class Incremental:
    """What the published generation ``prior`` already holds that ``gen`` can carry."""

    gens: GenerationStore
    gen: Generation
    prior: Generation | None
    new_files: list[Part] = field(default_factory=list)  # fact_result parts not in prior
    gone_files: list[Part] = field(default_factory=list)  # prior fact_result parts not in gen
    touched: pa.Array | None = None  # the builds whose points changed (``_touched_builds``)
    _appended: tuple[list[str], int] | None = None  # appended runs, reach of ``appended_latest``

    @classmethod
    def of(cls, gens: GenerationStore, gen: Generation, from_scratch: bool) -> Incremental:
        prior = None if from_scratch or not gen.parent else gens.load(gen.parent)
        if prior is not None and (not carried(prior, "dim_series") or earlier_layout(prior)):
            prior = None  # derived by other SQL, or in one part where a part per source or build is kept now
        if prior is not None and prior.schema_version != gen.schema_version:
            prior = None  # a migration gave the facts new digests
        sources = {p.key for p in gen.parts("fact_result")}
        # A source's part keeps every result it ever had (restated ones too), so a series
        # leaves the facts only with its source.
        if prior is not None and {p.key for p in prior.parts("fact_result")} - sources:
            prior = None
        new, gone = parts_diff(prior.parts("fact_result") if prior else [], gen.parts("fact_result"))
        return cls(gens, gen, prior, new, gone)

    def source_parts(self, con: duckdb.DuckDBPyConnection, table: str, sources: dict[str, Source]) -> list[Part]:
        """One part of ``table`` per source of ``sources`` (each gh-pages run for the run points,
        every source for the speedup pairs: a model whose rows each read one source's rows),
        re-derived only where its inputs changed, a batch of sources at a time."""
        names = {key: keyed_name(table, key, source.digest) for key, source in sources.items()}
        parts = self._unchanged(table, names)
        results = Counter()
        for part in self.gen.parts("fact_result"):
            results[part.key] += part.rows
        for batch in map(set, sized_batches((key, results[key]) for key in sorted(sources) if key not in parts)):
            revisions = {revision for key in batch for revision in sources[key].revisions}
            views = {
                "fact_result": ([p for p in self.gen.parts("fact_result") if p.key in batch], ""),
                "fact_revision_member": ([p for p in self.gen.parts("fact_revision_member") if p.key in revisions], ""),
            }
            with narrowed(con, self.gen, views):
                parts |= self._keyed_parts(table, stream(con, table), batch, names)
        return [parts[key] for key in sorted(parts)]

    def run_parts(self, con: duckdb.DuckDBPyConnection, table: str, run_points: list[Part], reach: int) -> list[Part]:
        """One part of ``table`` per gh-pages run (``fact_run_step``: the steps into it,
        ``fact_recent_point``: the recent levels at it), whose rows read the run's points and
        those of up to ``reach`` runs before it per series. So a part is named by a digest chained
        over the run point parts of every run up to its run, in upstream's order: a new run at the
        end adds a part and carries the others; a changed run re-derives its part and those of
        every run after it. Derived a batch of runs at a time over the run points their rows need
        (``run_batches``)."""
        point_file = {p.key: p.file for p in run_points if p.rows}
        # the runs and the order of ``runs_reaching``, read from the revisions alone
        order = [run for run, _ in con.execute(f"{RUN_SEQ} order by seq, run").fetchall() if run in point_file]
        chained = chained_digests([(run, point_file[run]) for run in order])
        names = {run: keyed_name(table, run, name) for run, name in chained.items()}
        parts = self._unchanged(table, names)
        source = model_sql(table).strip().removesuffix(";")
        key = ORDER[table][0]
        for heads, needed in run_batches(self._reaching(con, order, parts, reach)):
            con.register("head_run", pa.table({"run": pa.array(sorted(heads), pa.string())}))
            views = {
                "fact_run_point": ([p for p in run_points if p.key in needed], ""),
                # decompose_points reads only the 'run' sides of side_points
                "fact_recent_point": ([], ""),
                "fact_build_point": ([], ""),
            }
            with narrowed(con, self.gen, views):
                rows = stream(con, table, f"select * from ({source}\n) where {key} in (select run from head_run)")
                parts |= self._keyed_parts(table, rows, heads, names)
        return [parts[run] for run in sorted(parts)]

    def _reaching(
        self, con: duckdb.DuckDBPyConnection, order: list[str], parts: dict[str, Part], reach: int
    ) -> list[tuple[str, int, list[str]]]:
        """``runs_reaching``'s rows of the runs in ``order`` without a part in ``parts``. When
        they all come after the runs that keep theirs (a refresh that appends runs), only their
        own series are looked up (``appended_reaching``), once for both per-run tables: the
        first asks for the most runs (``SQL_MODELS`` order), the second reads the same rows."""
        pending = [run for run in order if run not in parts]
        if not pending:
            return []
        if len(pending) == len(order) or order[-len(pending) :] != pending:
            return [row for row in con.execute(runs_reaching(reach)).fetchall() if row[0] not in parts]
        if self._appended is None or self._appended[0] != pending or self._appended[1] < reach:
            con.register("appended_run", pa.table({"run": pa.array(pending, pa.string())}))
            con.execute(f"create or replace temp table appended_latest as {appended_latest(reach)}")
            self._appended = (pending, reach)
        rows = {row[0]: row for row in con.execute(appended_reaching(reach)).fetchall()}
        return [rows[run] for run in pending]

    def _unchanged(self, table: str, names: dict[str, str]) -> dict[str, Part]:
        """The published parts of ``table`` whose key still wants the same part (named by what
        its rows come from): those are carried."""
        held = {(p.key, p.file): p for p in self.prior.parts(table)} if self.prior else {}
        wanted = {key: (key, part_file(table, name)) for key, name in names.items()}
        return {key: held[want] for key, want in wanted.items() if want in held}

    def _keyed_parts(
        self, table: str, rows: pa.RecordBatchReader, keys: set[str], names: dict[str, str]
    ) -> dict[str, Part]:
        """A part of ``table`` per key of ``keys`` (a source, a run), written as its part of
        ``names``, from ``rows`` sorted by the key (``ORDER``); a key without rows (a source
        without a pair, a run without a step) gets an empty part, so it is not derived again."""
        parts = {key: self._keyed_part(table, key, names[key], part) for key, part in grouped(rows, ORDER[table][0])}
        return parts | {key: self._keyed_part(table, key, names[key], empty(table)) for key in keys - parts.keys()}

    def _keyed_part(self, table: str, key: str, name: str, rows: pa.Table) -> Part:
        """The part ``name``, written unless it exists: its name is a digest of what its rows
        come from, so a file of that name holds these rows, and a published part is never
        rewritten."""
        if self.gens.storage.exists(file := part_file(table, name)):
            return Part(key=key, file=file, rows=rows.num_rows)
        return self.gens.write_part(table, key, name, rows)

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
        con.register("changed_step", self._changed_rows("fact_run_step", run_steps, ["sweep_key"]))
        held = parts_select("fact_series_spread", self.prior.parts("fact_series_spread"))
        con.execute(
            "create or replace temp table touched_sweep as select sweep_key from changed_step union "
            f"select sweep_key from dim_series anti join ({held}) using (series_digest)"
        )
        in_touched = "sweep_key in (select sweep_key from touched_sweep)"
        views = {"fact_run_step": (run_steps, in_touched), "dim_series": (self.gen.parts("dim_series"), in_touched)}
        try:
            return self._rederived(con, "fact_series_spread", in_touched, views)
        finally:
            con.execute("drop table touched_sweep")

    def speedup_spreads(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """The pairings of two series that are both in run point parts that came or went
        re-derived (a pairing's spread reads only its two series' points, and a run changes it
        only when it holds both); the others carried."""
        if self.prior is None:
            return [self.content_part("fact_speedup_spread", stream(con, "fact_speedup_spread"))]
        changed = self._changed_rows("fact_run_point", run_points, ["series_digest"])
        con.register("changed_point", changed)
        con.execute("create or replace temp table touched_series as select distinct series_digest from changed_point")
        touched = "{} in (select series_digest from touched_series)"
        both = f"{touched.format('liger_series_digest')} and {touched.format('baseline_series_digest')}"
        views = {"fact_run_point": (run_points, touched.format("series_digest"))}
        try:
            return self._rederived(con, "fact_speedup_spread", both, views)
        finally:
            con.execute("drop table touched_series")

    def _rederived(
        self, con: duckdb.DuckDBPyConnection, table: str, touched: str, views: dict[str, tuple[list[Part], str]]
    ) -> list[Part]:
        """``table`` as published, its rows that meet ``touched`` replaced by what its model
        gives over ``views`` (narrowed to what those rows read): one part."""
        con.execute(f"create or replace temp table rederived_rows as {parts_select(table, self.prior.parts(table))}")
        try:
            con.execute(f"delete from rederived_rows where {touched}")
            with narrowed(con, self.gen, views):
                con.execute(f"insert into rederived_rows by name {model_sql(table)}")
            return [self.content_part(table, stream(con, table, "select * from rederived_rows"))]
        finally:
            con.execute("drop table rederived_rows")

    def build_parts(self, con: duckdb.DuckDBPyConnection, table: str, run_points: list[Part]) -> list[Part]:
        """One part of ``table`` (``fact_build_point``, ``fact_speedup_point``) per build, whose
        rows read only what stands for that build. The builds whose points changed re-derived;
        the other builds' parts carried. From scratch, every build, a batch of builds at a time:
        the model's medians and source lists hold all of a group's points, which at 10^7 results
        overflow DuckDB's memory limit in one query."""
        if self.prior is None:
            parts, batches = {}, build_batches(con)
        else:
            touched = set(self._touched_builds(run_points).to_pylist())
            builds = set(con.sql("select build from dim_build").to_arrow_table()["build"].to_pylist())
            parts = {p.key: p for p in self.prior.parts(table) if p.key in builds - touched}
            batches = build_batches(con, touched)
        for batch in batches:
            parts |= self._derive_builds(con, table, run_points, batch)
        return [parts[build] for build in sorted(parts)]

    def _derive_builds(
        self, con: duckdb.DuckDBPyConnection, table: str, run_points: list[Part], builds: pa.Array
    ) -> dict[str, Part]:
        """``table``'s parts of ``builds``: the model over views narrowed to what their rows read."""
        con.register("touched_build", pa.table({"build": builds}))
        in_batch = "build in (select build from touched_build)"
        # fact_build_point reads the run points and, for a release build, its version's other
        # rows (main-branch or imported); fact_speedup_point reads the speedup pairs.
        releases = "source <> 'gh-pages' and liger_version in (select build from touched_build)"
        views = (
            {"fact_run_point": (run_points, in_batch), "fact_result": (self.gen.parts("fact_result"), releases)}
            if table == "fact_build_point"
            else {"fact_speedup_pair": (self.gen.parts("fact_speedup_pair"), in_batch)}
        )
        source = model_sql(table).strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            return self._content_parts(table, stream(con, table, f"select * from ({source}\n) where {in_batch}"))

    def build_steps(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """One part per head build: the pairs of consecutive builds into it. A head is re-derived
        when a build on either side of one of its pairs was touched or its series' steps changed
        (a series' builds gained or lost one before it, which also renumbers it); the other heads'
        parts are carried (a pair's rows read only its two builds' points and its series' order,
        ``head_point``). From scratch, a batch of head
        builds at a time, as fact_build_point. The builds' order (``series_builds``, a window
        over every build point) is computed once; each batch decomposes over the points of its
        pairs' builds only. When the touched builds come after every other build (a refresh that
        appends a nightly), only their series are ordered, after their latest other build."""
        appended = None if self.prior is None else appended_builds(con, self._touched_builds(run_points))
        if appended is not None:
            con.register("touched_build", pa.table({"build": sorted(appended)}))
        rows = "select * from series_builds" if appended is None else APPENDED_SERIES_BUILDS
        con.execute(f"create or replace temp table series_build_rows as {rows}")
        con.execute("create or replace view series_builds as select * from series_build_rows")
        try:
            steps = con.sql(
                "select distinct prev_build, build from series_build_rows where prev_build is not null"
            ).to_arrow_table()
            con.register("build_step", steps)
            heads = set(steps["build"].to_pylist())
            if self.prior is None:
                parts, batches = {}, build_batches(con)
            elif appended is not None:
                parts = {p.key: p for p in self.prior.parts("fact_build_step") if p.key not in appended}
                batches = build_batches(con, heads)
            else:
                redo = self._redone_heads(con, run_points)
                held = {p.key: p for p in self.prior.parts("fact_build_step")}
                parts = {head: held[head] for head in heads - redo if head in held}
                batches = build_batches(con, redo)
            for batch in batches:
                parts |= self._derive_steps(con, batch)
            return [parts[head] for head in sorted(parts)]
        finally:
            con.execute((SQL_DIR / "views" / "series_builds.sql").read_text())
            con.execute("drop table series_build_rows")

    def _redone_heads(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> set[str]:
        """``REDONE_HEADS``: the head builds with a touched build on either side of one of their
        pairs, or whose series steps differ from those the published table holds (a build
        inserted before others renumbers its series' later builds, so their heads are redone)."""
        con.register("touched_build", pa.table({"build": self._touched_builds(run_points)}))
        held = parts_select("fact_build_step", self.prior.parts("fact_build_step"))
        redo = con.sql(REDONE_HEADS.format(held=held))
        return set(redo.to_arrow_table()["build"].to_pylist())

    def _derive_steps(self, con: duckdb.DuckDBPyConnection, heads: pa.Array) -> dict[str, Part]:
        """fact_build_step's parts of ``heads``: the model over the build points of those heads
        and the builds their pairs start from (a pair's decomposition reads only its two builds'
        points, so pairs with a build left out give no rows)."""
        con.register("touched_build", pa.table({"build": heads}))
        builds = set(heads.to_pylist()) | set(
            con.sql("select prev_build from build_step where build in (select build from touched_build)")
            .to_arrow_table()["prev_build"]
            .to_pylist()
        )
        views = {
            "fact_build_point": ([p for p in self.gen.parts("fact_build_point") if p.key in builds], ""),
            "fact_run_point": ([], ""),  # decompose_points reads only the 'build' sides
            "fact_recent_point": ([], ""),
        }
        source = model_sql("fact_build_step").strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            rows = f"select * from ({source}\n) where head_build in (select build from touched_build)"
            return self._content_parts("fact_build_step", stream(con, "fact_build_step", rows))

    def _content_parts(self, table: str, rows: pa.RecordBatchReader) -> dict[str, Part]:
        """A part of ``table`` per build in ``rows`` (sorted by it: its first ``ORDER`` column),
        named by its content and keyed by the build."""
        return {
            build: replace(self.gens.write_content_part(table, part, part_folder(table, build)), key=build)
            for build, part in grouped(rows, ORDER[table][0])
        }

    def _touched_builds(self, run_points: list[Part]) -> pa.Array:
        """Builds of run parts that came or went, and the versions (their release builds) of
        main-branch or imported rows in fact_result parts that came or went. Read from those
        parts once: fact_build_point and fact_build_step both ask."""
        if self.touched is None:
            self.touched = self._read_touched_builds(run_points)
        return self.touched

    def _read_touched_builds(self, run_points: list[Part]) -> pa.Array:
        builds = self._changed_rows("fact_run_point", run_points, ["build"])["build"]
        rows = self.gens.read_parts("fact_result", self.new_files + self.gone_files, ["source", "liger_version"])
        versions = rows.filter(pc.not_equal(rows["source"], "gh-pages"))["liger_version"]
        return pa.array(sorted(set(builds.to_pylist()) | set(versions.to_pylist())), pa.string())

    def _changed_rows(self, table: str, parts: list[Part], columns: list[str]) -> pa.Table:
        """``columns`` of the parts of ``table`` that came (``parts`` has them, the published
        table not) or went."""
        came, went = parts_diff(self.prior.parts(table), parts)
        return self.gens.read_parts(table, came + went, columns)

    def content_part(self, table: str, data: pa.Table | pa.RecordBatchReader) -> Part:
        # Keyed by the derivation version: a later refresh carries it only under the same SQL.
        return replace(self.gens.write_content_part(table, data), key=derivation_version())
