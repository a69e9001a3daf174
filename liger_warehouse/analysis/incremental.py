"""What a refresh derives of each derived table, and what it carries from the published
generation.

A refresh derives what its new facts touch and carries the rest from the published generation
with the same rows a derivation from scratch gives:

- ``fact_run_point`` has one part per gh-pages run, and ``fact_build_source``,
  ``fact_speedup_pair`` and ``fact_restatement`` one per source (a run, a main-branch CSV, an
  import), named by a digest of what the source's rows come from (its fact_result parts, its
  revisions and so their members, the releases of its commit, the SQL): a source whose inputs
  are unchanged keeps its part, a new or changed one gets a new part;
- ``dim_series`` adds the series of new fact_result parts that it lacks;
- ``series_latest_runs`` re-derives the series of the runs a refresh appends (when it changes no
  other run) and carries the others: the per-run tables read their appended runs' series' latest
  runs from its published rows;
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
- ``fact_speedup_step`` has one part per gh-pages run, named as those: the runs a refresh appends
  read their pairings' last runs before them from the published spreads (each pairing's
  ``last_run``), or from the published steps when an appended run was published before;
- ``fact_speedup_spread`` re-derives the pairings of the Liger series in speedup step parts that
  came or went (a pairing's spread and newest run read only its own steps) and carries the others;
- ``dim_build``, ``fact_series_noise`` and ``fact_speedup_noise`` are derived whole, each a pass
  over one row per source and build, series or pairing: the builds add up the rows of
  ``fact_build_source``, and a series' noise is its spread shrunk toward pools over every series,
  so one new run moves them all.

The same model SQL runs in both cases, over views narrowed to the touched parts or builds.

At 10^7 results no table is held whole in Python, and no model runs over everything in one
query where that overflows DuckDB's memory limit: DuckDB sorts each table and streams it
(``model_rows.stream``) into parts written a row group at a time; ``fact_build_point`` and
``fact_build_step`` are derived a batch of builds at a time, and the per-source and per-run
tables a batch of sources or runs (``run_batches``) at a time, each batch streamed into its parts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.build_tables import BuildTables
from liger_warehouse.analysis.model_rows import (
    derive,
    in_order,
    model_sql,
    narrowed,
    stream,
)
from liger_warehouse.analysis.part_inputs import (
    Source,
    carried,
    chained_digests,
    earlier_layout,
    keyed_name,
    sized_batches,
)
from liger_warehouse.analysis.run_batches import (
    RUN_SEQ,
    appended_latest,
    appended_latest_held,
    appended_reaching,
    appended_series,
    held_pairing_runs,
    held_runs,
    pairings_latest,
    register_appended,
    run_batches,
    runs_reaching,
    stepped_pairing_runs,
)
from liger_warehouse.model.derived_order import ORDER
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.serve.table_views import parts_select
from liger_warehouse.store.generations import Generation, GenerationStore, Part, parts_diff


@dataclass
class Incremental(BuildTables):
    """What a refresh derives of each derived table and what it carries from the published
    generation ``prior`` (the per-build tables: ``BuildTables``)."""

    _appended: tuple[list[str], int] | None = None  # appended runs, reach of ``appended_latest``
    _new_runs: list[str] | None = None  # ``_new_runs_appended``, read once: three tables ask

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
        """One part of ``table`` per source of ``sources`` (each gh-pages run for ``fact_run_point``,
        every source for ``fact_build_source``, ``fact_speedup_pair`` and ``fact_restatement``:
        models whose rows each read one source's rows),
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
        order, names, parts = self._run_names(con, table, run_points)
        for heads, needed in run_batches(self._reaching(con, order, parts, reach, run_points)):
            views = {
                "fact_run_point": ([p for p in run_points if p.key in needed], ""),
                # decompose_points reads only the 'run' sides of side_points
                "fact_recent_point": ([], ""),
                "fact_build_point": ([], ""),
            }
            parts |= self._run_rows(con, table, heads, names, views)
        return [parts[run] for run in sorted(parts)]

    def speedup_steps(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """``fact_speedup_step``, one part per gh-pages run named as ``run_parts`` names them. A
        pairing's step into a run reads the last run before it that holds both of its series,
        however far back, so the runs a refresh appends are derived over their own points and
        those of the runs their pairings were last in (``pairings_latest``: from the published
        spreads when the appended runs are all new, else from the published steps); any other
        refresh derives its runs over every run point, in one query."""
        table = "fact_speedup_step"
        order, names, parts = self._run_names(con, table, run_points)
        pending = [run for run in order if run not in parts]
        views = {}
        if self.prior is not None and _appended_only(order, pending):
            if pending == self._new_runs_appended(con, run_points):
                latest = held_pairing_runs(parts_select("fact_speedup_spread", self.prior.parts("fact_speedup_spread")))
            else:
                latest = stepped_pairing_runs(parts_select(table, self.prior.parts(table)))
            needed = pairings_latest(con, pending, latest)
            in_appended = "series_digest in (select series_digest from appended_series)"
            views = {"fact_run_point": ([p for p in run_points if p.key in needed | set(pending)], in_appended)}
        if pending:
            parts |= self._run_rows(con, table, set(pending), names, views)
        return [parts[run] for run in sorted(parts)]

    def _run_names(
        self, con: duckdb.DuckDBPyConnection, table: str, run_points: list[Part]
    ) -> tuple[list[str], dict[str, str], dict[str, Part]]:
        """The gh-pages runs with points in upstream's order (that of ``runs_reaching``, read from
        the revisions alone), the name of each run's part of ``table`` (a digest chained over the
        run point parts of every run up to it), and the published parts that keep their name."""
        point_file = {p.key: p.file for p in run_points if p.rows}
        order = _run_order(con, run_points)
        chained = chained_digests([(run, point_file[run]) for run in order])
        names = {run: keyed_name(table, run, name) for run, name in chained.items()}
        return order, names, self._unchanged(table, names)

    def _run_rows(
        self, con: duckdb.DuckDBPyConnection, table: str, heads: set[str], names: dict[str, str], views: dict
    ) -> dict[str, Part]:
        """The parts of ``table`` of the runs ``heads``: its model over ``views``, narrowed to
        the rows of those runs."""
        con.register("head_run", pa.table({"run": pa.array(sorted(heads), pa.string())}))
        source = model_sql(table).strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            rows = stream(
                con, table, f"select * from ({source}\n) where {ORDER[table][0]} in (select run from head_run)"
            )
            return self._keyed_parts(table, rows, heads, names)

    def _reaching(
        self,
        con: duckdb.DuckDBPyConnection,
        order: list[str],
        parts: dict[str, Part],
        reach: int,
        run_points: list[Part],
    ) -> list[tuple[str, int, list[str]]]:
        """``runs_reaching``'s rows of the runs in ``order`` without a part in ``parts``. When
        they all come after the runs that keep theirs (a refresh that appends runs), only their
        own series are looked up (``appended_reaching``), once for both per-run tables: the
        first asks for the most runs (``SQL_MODELS`` order), the second reads the same rows;
        from the published ``series_latest_runs`` when they are the new runs it appends."""
        pending = [run for run in order if run not in parts]
        if not pending:
            return []
        if not _appended_only(order, pending):
            return [row for row in con.execute(runs_reaching(reach)).fetchall() if row[0] not in parts]
        if self._appended is None or self._appended[0] != pending or self._appended[1] < reach:
            register_appended(con, pending)
            new = pending == self._new_runs_appended(con, run_points)
            latest = appended_latest_held(self._held_latest()) if new else appended_latest(reach)
            con.execute(f"create or replace temp table appended_latest as {latest}")
            self._appended = (pending, reach)
        rows = {row[0]: row for row in con.execute(appended_reaching(reach)).fetchall()}
        return [rows[run] for run in pending]

    def latest_runs(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[Part]:
        """``series_latest_runs``: when the refresh appends new runs and changes no other run's
        points, the rows of their series re-derived over the run points of those runs and of the
        runs the published rows name (a series' newest runs are among them), the others carried;
        otherwise derived over every run point."""
        table = "series_latest_runs"
        if self.prior is not None and not any(parts_diff(self.prior.parts("fact_run_point"), run_points)):
            return self.prior.parts(table)
        appended = self._new_runs_appended(con, run_points)
        if not appended:
            return [self.content_part(table, stream(con, table))]
        appended_series(con, appended)
        needed = held_runs(con, self._held_latest()) | set(appended)
        in_appended = "series_digest in (select series_digest from appended_series)"
        views = {"fact_run_point": ([p for p in run_points if p.key in needed], in_appended)}
        return self._rederived(con, table, in_appended, views)

    def _new_runs_appended(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[str]:
        """The runs whose points ``run_points`` adds to the published ones, in upstream's order,
        when that is all it changes (no run's points changed or went) and they come after every
        published run: a refresh that appends new runs. Empty otherwise."""
        if self._new_runs is None:
            self._new_runs = [] if self.prior is None else self._read_new_runs(con, run_points)
        return self._new_runs

    def _read_new_runs(self, con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[str]:
        came, went = parts_diff(self.prior.parts("fact_run_point"), run_points)
        order = _run_order(con, run_points)
        appended = [run for run in order if run in {p.key for p in came}]
        # a run whose points changed has a part that went: only new runs are left
        return [] if went or not _appended_only(order, appended) else appended

    def _held_latest(self) -> str:
        return parts_select("series_latest_runs", self.prior.parts("series_latest_runs"))

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

    def speedup_spreads(self, con: duckdb.DuckDBPyConnection, speedup_steps: list[Part]) -> list[Part]:
        """The pairings of the Liger series in speedup step parts that came or went re-derived (a
        pairing's spread reads only its own steps); the others carried."""
        if self.prior is None:
            return [self.content_part("fact_speedup_spread", stream(con, "fact_speedup_spread"))]
        con.register("changed_step", self._changed_rows("fact_speedup_step", speedup_steps, ["liger_series_digest"]))
        con.execute(
            "create or replace temp table touched_liger as select distinct liger_series_digest from changed_step"
        )
        touched = "liger_series_digest in (select liger_series_digest from touched_liger)"
        try:
            return self._rederived(con, "fact_speedup_spread", touched, {"fact_speedup_step": (speedup_steps, touched)})
        finally:
            con.execute("drop table touched_liger")

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


def _run_order(con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> list[str]:
    """The gh-pages runs with points (a part of ``run_points`` with rows), in upstream's order."""
    held = {p.key for p in run_points if p.rows}
    return [run for run, _ in con.execute(f"{RUN_SEQ} order by seq, run").fetchall() if run in held]


def _appended_only(order: list[str], pending: list[str]) -> bool:
    """Whether the runs ``pending`` (in upstream's ``order``) all come after every run that keeps
    its part, and some run does: a refresh that appends runs."""
    return 0 < len(pending) < len(order) and order[-len(pending) :] == pending
