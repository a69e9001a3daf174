"""One refresh's rows written into the lake, from what was normalized: each source's results
with their sightings and current flags, the change counts, revision members and quarantine, the
dimensions, the revisions, the golden commits, the compares of consecutive runs and the summary.

A source's ``fact_result`` rows are replaced only when they changed; every other row stays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import duckdb
import polars as pl
import pyarrow as pa

from liger_warehouse.build.plan import PendingRevision
from liger_warehouse.model.digests import content_digest
from liger_warehouse.model.revisions import GH_PAGES, IMPORT, RevisionRef
from liger_warehouse.model.tables import DIMENSIONS, INGESTED, SCHEMAS
from liger_warehouse.model.versions import parse_version
from liger_warehouse.normalize.dimensions import Dimensions

# The versions of every result that stands for a build (`result_build`): all but those of a
# withdrawn import, whose results are history only. Ranking a withdrawn import's version would
# shift the rank of every later build.
STANDING_VERSIONS = """
select distinct liger_version
from fact_result
where source_key not in (
    select source_key
    from dim_upstream_revision
    where source = 'import'
    group by source_key
    having not bool_or(is_head)
)
"""


@dataclass
class Summary:
    """What one refresh did, for metadata, logs and the CLI."""

    revisions: list[dict] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    added: int = 0
    restated: int = 0
    removed: int = 0
    no_longer_upstream: list[str] = field(default_factory=list)


class LakeWriter:
    """Writes one refresh's rows into the lake tables of ``con`` (inside its transaction), and
    notes whether anything changed and which sources did."""

    def __init__(self, con: duckdb.DuckDBPyConnection, changed: bool = False) -> None:
        self.con = con
        self.summary = Summary()
        self.changed = changed
        # The series whose gh-pages points this refresh may have changed: the change points
        # of no other series need computing again.
        self.touched_series: set[str] = set()
        # The sources that have fact_result rows: a source outside it has none to read.
        self.held_sources = {k for (k,) in con.execute("select distinct source_key from fact_result").fetchall()}

    def _insert(self, table: str, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        self.con.register("new_rows", data)
        try:
            self.con.execute(f"insert into {table} by name select * from new_rows")
        finally:
            self.con.unregister("new_rows")
        self.changed = True

    def read(self, sql: str, table: str, params: list | None = None) -> pa.Table:
        """Rows of ``table`` the SQL selects, in its schema."""
        return self.con.execute(sql, params or []).to_arrow_table().cast(SCHEMAS[table])

    # -- one source ---------------------------------------------------------------------

    def write_revision(self, rev: PendingRevision) -> None:
        """The members and quarantined records of one normalized revision."""
        self._insert("fact_revision_member", rev.members)
        if rev.quarantined:
            self._insert("quarantined_row", pa.Table.from_pylist(rev.quarantined, schema=SCHEMAS["quarantined_row"]))
        self.summary.revisions.append(
            {
                "revision": rev.ref.label,
                "commit": rev.ref.commit,
                "html_url": rev.ref.html_url,
                "rows": rev.members.num_rows + len(rev.quarantined),
                "new_results": rev.new_results,
                "quarantined": len(rev.quarantined),
            }
        )

    def prior_results(self, source_key: str) -> pl.DataFrame:
        """The ``fact_result`` rows of ``source_key`` as the lake holds them. A new source reads
        nothing: a read scans every row this transaction has added, a cost that grows through a
        full build."""
        if source_key not in self.held_sources:
            return pl.from_arrow(SCHEMAS["fact_result"].empty_table())
        sql = "select * from fact_result where source_key = ? order by result_digest"
        return pl.from_arrow(self.read(sql, "fact_result", [source_key]))

    def head_members(self, head: str, ingested: list[PendingRevision]) -> pl.Series:
        """The result digests of the head revision's members (repeats possible)."""
        for rev in ingested:
            if rev.digest == head:
                return pl.Series(rev.members["result_digest"], dtype=pl.String)
        sql = "select result_digest from fact_revision_member where revision_digest = ?"
        return pl.Series(self.con.execute(sql, [head]).to_arrow_table().column(0), dtype=pl.String)

    def write_results(self, source_key: str, prior: pl.DataFrame, results: pl.DataFrame) -> None:
        """Replace the source's ``fact_result`` rows when they changed."""
        if results.equals(prior):
            return
        self._count_changes(prior, results)
        if not prior.is_empty():
            self.con.execute("delete from fact_result where source_key = ?", [source_key])
        self._insert("fact_result", results.to_arrow().cast(SCHEMAS["fact_result"]))
        self.held_sources.add(source_key)
        for rows in (prior, results):
            self.touched_series.update(rows.filter(pl.col("source") == GH_PAGES)["series_digest"].unique().to_list())
        self.changed = True

    def _count_changes(self, prior: pl.DataFrame, results: pl.DataFrame) -> None:
        if prior.is_empty():  # a new source: nothing was current before, nothing is replaced
            self.summary.added += results.height
            return
        before = prior.filter("is_current")
        after = results.filter("is_current")
        gone = before.join(after.select("result_digest"), on="result_digest", how="anti")
        replaced = gone.join(after.select("series_digest").unique(), on="series_digest", how="semi").height
        self.summary.added += results.height - prior.height
        self.summary.restated += replaced
        self.summary.removed += gone.height - replaced

    # -- small, whole tables --------------------------------------------------------------

    def write_dimensions(self, dims: Dimensions) -> None:
        """The dimension rows first seen in this refresh, and ``dim_version`` when its versions
        changed. Reads ``dim_upstream_revision``: write the revisions first."""
        for table in DIMENSIONS:
            rows = list(dims.new[table].values())
            if rows:
                self._insert(table, pa.Table.from_pylist(rows, schema=SCHEMAS[table]))
        versions = {v for (v,) in self.con.execute(STANDING_VERSIONS).fetchall()}
        table = _version_table(versions)
        held = {v for (v,) in self.con.execute("select liger_version from dim_version").fetchall()}
        if set(table["liger_version"].to_pylist()) != held:
            self._replace_whole("dim_version", table)

    def write_revisions(self, held: dict[str, dict], heads: set[str], listed: dict[str, RevisionRef]) -> None:
        """``dim_upstream_revision`` with today's upstream and head flags, when anything changed."""
        rows = []
        for rev_digest, row in sorted(held.items(), key=lambda kv: (kv[1]["source_key"], kv[1]["seq"])):
            upstream, head = rev_digest in listed and row["source"] != IMPORT, rev_digest in heads
            self.changed |= row["is_upstream"] != upstream or row["is_head"] != head
            rows.append({**row, "is_upstream": upstream, "is_head": head})
        if self.changed:
            self._replace_whole(
                "dim_upstream_revision",
                pa.Table.from_pylist(rows, schema=SCHEMAS["dim_upstream_revision"]),
            )

    def write_golden(self, golden: bytes | None) -> None:
        """``golden_commit`` from upstream's golden-commits file, when its bytes changed."""
        if golden is None:
            return
        value = content_digest(golden)
        prior = self.con.execute("select content_digest from golden_commit limit 1").fetchall()
        if prior == [(value,)]:
            return
        data = json.loads(golden)
        default = data.get("default_commit")
        rows = [
            {"kernel": kernel, "run": run, "is_default": run == default, "content_digest": value}
            for kernel, run in sorted((data.get("golden_commits") or {}).items())
        ]
        self._replace_whole("golden_commit", pa.Table.from_pylist(rows, schema=SCHEMAS["golden_commit"]))

    def held_compares(self) -> set[tuple[str, str]]:
        """The pairs of runs (base, head) whose compare the lake holds."""
        return set(self.con.execute("select base_run, head_run from fact_run_compare").fetchall())

    def write_compares(self, tables: dict[str, pa.Table]) -> None:
        """The rows of compares new to the lake, by table: added only, since a compare of two
        commits never changes."""
        for table, data in tables.items():
            self._insert(table, data)

    def _replace_whole(self, table: str, data: pa.Table) -> None:
        self.con.execute(f"delete from {table}")
        self._insert(table, data)
        self.changed = True

    def summary_dict(self, withdrawn: str | None = None) -> dict:
        """What ``Summary`` holds, row counts, and the withdrawal it carries."""
        s = self.summary
        counts = {t: self.con.execute(f"select count(*) from {t}").fetchone()[0] for t in INGESTED}
        return {
            "revisions_ingested": len(s.revisions),
            "results_added": s.added,
            "results_restated": s.restated,
            "results_removed": s.removed,
            "revisions": s.revisions,
            "rejected": s.rejected,
            "deferred": s.deferred,
            "warnings": s.warnings,
            "no_longer_upstream": s.no_longer_upstream,
            "row_counts": counts,
            **({"withdrawn": withdrawn} if withdrawn else {}),
        }


def apply_sightings(results: pl.DataFrame, ingested: list[PendingRevision], held: dict[str, dict]) -> pl.DataFrame:
    """Widen each result's first/last revision to the new revisions that show it; ``held`` gives
    every revision's ``seq``."""
    if not ingested:
        return results
    only = ingested[0].digest if len(ingested) == 1 else None
    if only and _all_equal(results, ("first_revision_digest", "last_revision_digest"), only):
        # One new revision, and every result was first and last seen in it (a new gh-pages
        # run, say): it cannot widen anything.
        return results
    seq = pl.DataFrame(
        {"rev": list(held), "seq": [r["seq"] for r in held.values()]},
        schema={"rev": pl.String, "seq": pl.Int64},
    )
    seen = (
        pl.DataFrame(
            {
                "result_digest": pa.concat_arrays([c for r in ingested for c in r.members["result_digest"].chunks]),
                "rev": [r.digest for r in ingested for _ in range(r.members.num_rows)],
                "seq": [r.ref.seq for r in ingested for _ in range(r.members.num_rows)],
            },
            schema={"result_digest": pl.String, "rev": pl.String, "seq": pl.Int64},
        )
        .group_by("result_digest")
        .agg(
            first_seen=pl.col("rev").sort_by("seq").first(),
            first_seq=pl.col("seq").min(),
            last_seen=pl.col("rev").sort_by("seq").last(),
            last_seq=pl.col("seq").max(),
        )
    )
    out = (
        results.join(seen, on="result_digest", how="left")
        .join(
            seq.rename({"rev": "first_revision_digest", "seq": "old_first"}),
            on="first_revision_digest",
            how="left",
        )
        .join(
            seq.rename({"rev": "last_revision_digest", "seq": "old_last"}),
            on="last_revision_digest",
            how="left",
        )
        .with_columns(
            first_revision_digest=pl.when(pl.col("first_seq") < pl.col("old_first"))
            .then(pl.col("first_seen"))
            .otherwise(pl.col("first_revision_digest")),
            last_revision_digest=pl.when(pl.col("last_seq") > pl.col("old_last"))
            .then(pl.col("last_seen"))
            .otherwise(pl.col("last_revision_digest")),
        )
    )
    return out.select(results.columns)


def apply_current(results: pl.DataFrame, current: pl.Series) -> pl.DataFrame:
    """Current means: among the members of its source's head revision (``current``)."""
    return results.with_columns(is_current=pl.col("result_digest").is_in(current.implode()))


def _version_table(versions: set[str]) -> pa.Table:
    parsed = sorted((parse_version(v), v) for v in versions if parse_version(v) is not None)
    rows = [
        {
            "liger_version": text,
            "version_rank": rank,
            "major": v.major,
            "minor": v.minor,
            "patch": v.micro,
            "is_prerelease": v.is_prerelease,
        }
        for rank, (v, text) in enumerate(parsed, start=1)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["dim_version"])


def _all_equal(df: pl.DataFrame, columns: tuple[str, ...], value: str) -> bool:
    """Whether every row of ``df`` holds ``value`` in each of ``columns``."""
    return bool(df.select(pl.all_horizontal(pl.col(c).eq_missing(value) for c in columns).all()).item())
