"""The derived tables kept in a part per build (``fact_build_point``, ``fact_speedup_point``) or
per head build (``fact_build_step``): what a refresh re-derives of them and what it carries
(``incremental`` says why), and their derivation from scratch a batch of builds at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.build_order import APPENDED_SERIES_BUILDS, REDONE_HEADS, appended_builds
from liger_warehouse.analysis.carrying import Carrying
from liger_warehouse.analysis.model_rows import model_sql, narrowed, stream
from liger_warehouse.analysis.part_inputs import build_batches
from liger_warehouse.serve.database import SQL_DIR
from liger_warehouse.serve.table_views import parts_select
from liger_warehouse.store.generations import Part


@dataclass
class BuildTables(Carrying):
    """The per-build tables of a refresh."""

    touched: pa.Array | None = None  # the builds whose points changed (``_touched_builds``)

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
        # rows (main-branch or imported); fact_speedup_point reads the speedup pairs. Of the
        # parts kept per run, only those of the runs that stand for the builds (``dim_build.runs``).
        holding = self._holding(con, run_points)
        releases = "source <> 'gh-pages' and liger_version in (select build from touched_build)"
        views = (
            {
                "fact_run_point": (holding(run_points), in_batch),
                "fact_result": (holding(self.gen.parts("fact_result")), releases),
            }
            if table == "fact_build_point"
            else {"fact_speedup_pair": (holding(self.gen.parts("fact_speedup_pair")), in_batch)}
        )
        source = model_sql(table).strip().removesuffix(";")
        with narrowed(con, self.gen, views):
            return self._content_parts(table, stream(con, table, f"select * from ({source}\n) where {in_batch}"))

    @staticmethod
    def _holding(con: duckdb.DuckDBPyConnection, run_points: list[Part]) -> Callable[[list[Part]], list[Part]]:
        """Which parts of a table kept per source (a gh-pages run, a main-branch CSV, an import)
        can hold rows of the builds of ``touched_build``: those of the runs that stand for them
        and those of every source that is not a gh-pages run."""
        stand = "select distinct unnest(runs) from dim_build where build in (select build from touched_build)"
        runs, gh_pages = {run for (run,) in con.execute(stand).fetchall()}, {p.key for p in run_points}
        return lambda parts: [p for p in parts if p.key in runs or p.key not in gh_pages]

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
