"""Integrity checks of a generation, in SQL over its Parquet parts.

Each check returns the number of offending rows and a few examples, so a failure says what
is wrong and where.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pipelines.store.generations import Generation, GenerationStore
from pipelines.tables import DIGEST_COLUMN, DIMENSIONS, SCHEMAS

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


def connect(gens: GenerationStore, gen: Generation) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with a view per table of ``gen``."""
    from pipelines.database import table_view_sql

    con = duckdb.connect()
    for table in SCHEMAS:
        con.execute(table_view_sql(gens, gen, table))
    return con


def _outcome(con: duckdb.DuckDBPyConnection, name: str, table: str, sql: str) -> CheckOutcome:
    rows = con.execute(f"select * from ({sql}) limit 6").fetchall()
    total = con.execute(f"select count(*) from ({sql})").fetchone()[0]
    return CheckOutcome(name, table, total, [" | ".join(map(str, r)) for r in rows[:5]])


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
    sql = (
        "select result_digest, p20, p50, p80 from fact_result where not (p20 <= p50 and p50 <= p80)"
    )
    return _outcome(con, "p20_le_p50_le_p80", "fact_result", sql)


def reconciliation(con: duckdb.DuckDBPyConnection) -> CheckOutcome:
    """Every upstream row of every revision is a member or a quarantined row, and no more."""
    sql = """
        with accounted as (
            select revision_digest, count(*) n from fact_revision_member group by 1
            union all
            select revision_digest, count(*) n from quarantined_row group by 1
        )
        select r.revision_digest, r.path, r.commit, r.row_count, coalesce(sum(a.n), 0) accounted
        from dim_upstream_revision r left join accounted a using (revision_digest)
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


def raw_recount(raw_bytes: bytes) -> int:
    """Rows in an upstream file, counted by Python's csv module alone (blank lines skipped)."""
    import csv
    import io

    text = raw_bytes.decode("utf-8")
    return sum(1 for row in csv.reader(io.StringIO(text, newline="")) if row) - 1


def reconciliation_with_raw(
    con: duckdb.DuckDBPyConnection, raw, revisions: list[str]
) -> CheckOutcome:
    """New revisions: members + quarantined rows equal an independent recount of the raw file."""
    if not revisions:
        return CheckOutcome("rows_match_raw_snapshot", "fact_revision_member", 0, [])
    con.execute("create or replace temp table _new(revision_digest varchar)")
    con.executemany("insert into _new values (?)", [[r] for r in revisions])
    counted = con.execute(
        """
        select r.revision_digest, r.path, r.commit, r.content_digest,
               (select count(*) from fact_revision_member m where m.revision_digest = r.revision_digest)
             + (select count(*) from quarantined_row q where q.revision_digest = r.revision_digest)
        from dim_upstream_revision r semi join _new using (revision_digest)
        """
    ).fetchall()
    bad = [
        f"{path} @ {commit}: warehouse {n}, raw file {expected}"
        for _, path, commit, content, n in counted
        if n != (expected := raw_recount(raw.get(content)))
    ]
    return CheckOutcome("rows_match_raw_snapshot", "fact_revision_member", len(bad), bad[:5])
