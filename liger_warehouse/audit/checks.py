"""Integrity checks of a generation, in SQL over its Parquet parts.

Each check returns the number of offending rows and a few examples, so a failure says what
is wrong and where.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from liger_warehouse.model.revisions import IMPORT
from liger_warehouse.model.tables import DIGEST_COLUMN, DIMENSIONS, SCHEMAS
from liger_warehouse.store.generations import Generation, GenerationStore, Part

FACT_DIGESTS = {
    "protocol_digest": "dim_protocol",
    "workload_digest": "dim_workload",
    "environment_digest": "dim_environment",
    "implementation_digest": "dim_implementation",
    "first_revision_digest": "dim_upstream_revision",
    "last_revision_digest": "dim_upstream_revision",
}


@dataclass
class CheckOutcome:
    name: str
    table: str
    failures: int
    examples: list[str]

    @property
    def passed(self) -> bool:
        return self.failures == 0


def connect(gens: GenerationStore, gen: Generation, reader: bool = False) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table of ``gen``; ``reader``: for a command that only
    reads (``open_duckdb``)."""
    from liger_warehouse.serve.database import open_duckdb
    from liger_warehouse.serve.table_views import table_view_sql

    con = open_duckdb(gens.storage, reader=reader)
    for table in SCHEMAS:
        con.execute(table_view_sql(gen, table))
    return con


def _outcome(con: duckdb.DuckDBPyConnection, name: str, table: str, sql: str) -> CheckOutcome:
    total = con.execute(f"select count(*) from ({sql})").fetchone()[0]
    # Examples only for a failing check: a passing one then reads its tables once, not twice.
    rows = con.execute(f"select * from ({sql}) limit 5").fetchall() if total else []
    return CheckOutcome(name, table, total, [" | ".join(map(str, r)) for r in rows])


def digest_uniqueness(con: duckdb.DuckDBPyConnection) -> list[CheckOutcome]:
    tables = (*DIMENSIONS, "dim_upstream_revision", "fact_result")
    column = {**DIGEST_COLUMN, "fact_result": "result_digest"}
    return [
        _outcome(
            con,
            "digests_unique",
            t,
            f"select {column[t]}, count(*) n from {t} group by 1 having n > 1",
        )
        for t in tables
    ]


def referential_integrity(con: duckdb.DuckDBPyConnection) -> list[CheckOutcome]:
    outcomes = []
    for fact, refs in (
        ("fact_result", FACT_DIGESTS),
        (
            "fact_revision_member",
            {"result_digest": "fact_result", "revision_digest": "dim_upstream_revision"},
        ),
    ):
        for column, dim in refs.items():
            key = "result_digest" if dim == "fact_result" else DIGEST_COLUMN[dim]
            sql = f"select f.{column} from {fact} f anti join {dim} d on f.{column} = d.{key}"
            outcomes.append(_outcome(con, f"no_orphan_{column}", fact, sql))
    return outcomes


def quantile_order(con: duckdb.DuckDBPyConnection) -> CheckOutcome:
    sql = "select result_digest, p20, p50, p80 from fact_result where not (p20 <= p50 and p50 <= p80)"
    return _outcome(con, "p20_le_p50_le_p80", "fact_result", sql)


def reconciliation(con: duckdb.DuckDBPyConnection, revisions: str = "dim_upstream_revision") -> CheckOutcome:
    """Every upstream row of every revision is a member or a quarantined row, and no more.

    ``revisions`` names the table or view of the revisions to reconcile (all by default)."""
    sql = f"""
        with accounted as (
            select revision_digest, count(*) n from fact_revision_member group by 1
            union all
            select revision_digest, count(*) n from quarantined_row group by 1
        )
        select r.revision_digest, r.path, r.commit, r.row_count, coalesce(sum(a.n), 0) accounted
        from {revisions} r left join accounted a using (revision_digest)
        group by all
        having r.row_count != coalesce(sum(a.n), 0)
    """
    return _outcome(con, "every_row_reconciled", "fact_revision_member", sql)


def all_checks(gens: GenerationStore, gen: Generation) -> list[CheckOutcome]:
    con = connect(gens, gen)
    try:
        return [
            *digest_uniqueness(con),
            *referential_integrity(con),
            quantile_order(con),
            reconciliation(con),
        ]
    finally:
        con.close()


def raw_recount(raw_bytes: bytes, source: str) -> int:
    """Rows in an upstream file, counted by Python's csv module alone (blank lines skipped);
    for an import (NDJSON), its non-blank lines as ``bytes.splitlines`` sees them."""
    import csv
    import io

    if source == IMPORT:
        return sum(1 for line in raw_bytes.splitlines() if line.strip())
    text = raw_bytes.decode("utf-8")
    # The default 128 KiB field limit would raise on a long (quarantined) field.
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    return sum(1 for row in csv.reader(io.StringIO(text, newline="")) if row) - 1


def reconciliation_with_raw(con: duckdb.DuckDBPyConnection, raw, revisions: list[str]) -> CheckOutcome:
    """New revisions: members + quarantined rows equal an independent recount of the raw file."""
    if not revisions:
        return CheckOutcome("rows_match_raw_snapshot", "fact_revision_member", 0, [])
    con.execute("create or replace temp table _new(revision_digest varchar)")
    con.executemany("insert into _new values (?)", [[r] for r in revisions])
    counted = con.execute(
        """
        select r.revision_digest, r.source, r.path, r.commit, r.content_digest,
               (select count(*) from fact_revision_member m where m.revision_digest = r.revision_digest)
             + (select count(*) from quarantined_row q where q.revision_digest = r.revision_digest)
        from dim_upstream_revision r semi join _new using (revision_digest)
        """
    ).fetchall()
    bad = [
        f"{path} @ {commit}: warehouse {n}, raw file {expected}"
        for _, source, path, commit, content, n in counted
        if n != (expected := raw_recount(raw.get(content), source))
    ]
    return CheckOutcome("rows_match_raw_snapshot", "fact_revision_member", len(bad), bad[:5])


# -- the audit of one refresh: what it changed, not the whole history ------------------------
#
# A refresh adds parts and keeps the others by reference; kept parts are immutable and were
# audited when they were written. So the staged generation is audited where it differs from
# the published one: the new parts, plus the facts and members of every source a new part
# belongs to (a source's fact part is rewritten whole), against whole dimensions (small).
# The manifest checks below close the induction: one fact part per source, every row of a new
# part in its source, and no part or revision a kept fact refers to dropped. Audit cost then
# follows the new data, not the history; ``all_checks`` still audits everything.

SCOPED = ("fact_result", "fact_revision_member", "quarantined_row")


def _new_parts(gen: Generation, prior: Generation, table: str) -> list[Part]:
    old = {p.file for p in prior.parts(table)}
    return [p for p in gen.parts(table) if p.file not in old]


def audit_scope(gens: GenerationStore, gen: Generation, prior: Generation) -> Generation:
    """``gen`` restricted to the fact parts an audit of the change has to read."""
    revisions = gens.read_table(gen, "dim_upstream_revision", ["revision_digest", "source_key"])
    source_of = dict(zip(*(revisions.column(c).to_pylist() for c in ("revision_digest", "source_key")), strict=True))
    sources = {p.key for p in _new_parts(gen, prior, "fact_result")}
    sources |= {source_of.get(p.key) for t in SCOPED[1:] for p in _new_parts(gen, prior, t)}
    tables = dict(gen.tables)
    tables["fact_result"] = [p for p in gen.parts("fact_result") if p.key in sources]
    for table in SCOPED[1:]:
        new = {p.file for p in _new_parts(gen, prior, table)}
        tables[table] = [p for p in gen.parts(table) if p.file in new or source_of.get(p.key) in sources]
    return Generation(id=gen.id, parent=gen.parent, created_at=gen.created_at, tables=tables)


def connect_changes(gens: GenerationStore, gen: Generation, prior: Generation) -> duckdb.DuckDBPyConnection:
    """Views of ``gen`` for auditing what it changes since ``prior``; ``audited_revision`` holds
    the revisions whose rows are in scope."""
    scope = audit_scope(gens, gen, prior)
    con = connect(gens, scope)
    con.execute(
        "create or replace temp view audited_revision as select * from dim_upstream_revision "
        "where revision_digest in (select revision_digest from fact_revision_member "
        "union all select revision_digest from quarantined_row)"
    )
    return con


def part_invariants(gens: GenerationStore, gen: Generation, prior: Generation) -> list[CheckOutcome]:
    """The manifest facts that let an audit of the change stand for an audit of everything."""
    keys = [p.key for p in gen.parts("fact_result")]
    twice = sorted({k for k in keys if keys.count(k) > 1}) if len(set(keys)) < len(keys) else []
    new_facts = _new_parts(gen, prior, "fact_result")
    outside = _rows_outside_their_source(gens, new_facts)
    # A schema migration writes the dimensions anew, and then every fact part too (so the audit
    # of the change reads every fact and member against the new dimensions).
    migrated = gen.schema_version != prior.schema_version and len(new_facts) == len(gen.parts("fact_result"))
    dropped = [
        f"{t} part {p.file} dropped"
        for t in DIMENSIONS
        for p in prior.parts(t)
        if not migrated and p.file not in {q.file for q in gen.parts(t)}
    ]
    kept = set(gens.read_table(gen, "dim_upstream_revision", ["revision_digest"]).column(0).to_pylist())
    lost = [
        r
        for r in gens.read_table(prior, "dim_upstream_revision", ["revision_digest"]).column(0).to_pylist()
        if r not in kept
    ]
    dropped += [f"revision {r} dropped" for r in lost]
    return [
        CheckOutcome(
            "one_part_per_source",
            "fact_result",
            len(twice) + len(outside),
            [f"source {k} has several parts" for k in twice][:5] + outside[:5],
        ),
        CheckOutcome("prior_references_kept", "fact_result", len(dropped), dropped[:5]),
    ]


def _rows_outside_their_source(gens: GenerationStore, parts: list[Part]) -> list[str]:
    if not parts:
        return []
    from liger_warehouse.serve.database import open_duckdb

    con = open_duckdb(gens.storage)
    try:
        uris = [gens.storage.uri(p.file) for p in parts]
        con.register("part_key", pa.table({"uri": uris, "key": [p.key for p in parts]}))
        rows = con.execute(
            f"select k.key, f.source_key, count(*) from read_parquet({uris!r}, filename = true) f "
            "join part_key k on f.filename = k.uri where f.source_key != k.key group by all"
        ).fetchall()
    finally:
        con.close()
    return [f"part of {key} holds {n} rows of {source}" for key, source, n in rows]
