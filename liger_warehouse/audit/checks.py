"""Integrity checks of the lake's tables, in SQL, run inside the publishing transaction.

Each check returns the number of offending rows and a few examples, so a failure says what
is wrong and where.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from liger_warehouse.model.revisions import IMPORT
from liger_warehouse.model.tables import DIGEST_COLUMN, DIMENSIONS

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


def all_checks(con: duckdb.DuckDBPyConnection) -> list[CheckOutcome]:
    """Every check that needs no raw snapshot, over the tables ``con`` shows."""
    return [*digest_uniqueness(con), *referential_integrity(con), quantile_order(con), reconciliation(con)]


def audit(con: duckdb.DuckDBPyConnection, raw, new_revisions: list[str]) -> list[CheckOutcome]:
    """The blocking checks of one publish: every check over the whole lake as this transaction
    leaves it, and the rows of each new revision against an independent recount of its raw file."""
    return [*all_checks(con), reconciliation_with_raw(con, raw, new_revisions)]


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
