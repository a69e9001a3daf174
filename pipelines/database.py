"""``liger.duckdb``: one view per published table, then the analytic views kept in ``sql/``.

The file is rebuilt beside the old one and moved into place, so a reader opens either the
previous database or the new one. It is written in DuckDB's v1.0 storage format so that older
DuckDB builds, such as the standalone ``duckdb`` CLI, open it too.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import duckdb

from pipelines.failpoints import failpoint
from pipelines.store.generations import Generation, GenerationStore
from pipelines.tables import SCHEMAS, empty

DATABASE = "liger.duckdb"
STORAGE_COMPATIBILITY = "v1.0.0"
SQL_DIR = Path(__file__).resolve().parent.parent / "sql"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _empty_part(gens: GenerationStore, table: str) -> str:
    """A zero-row part so that an empty table still has its columns."""
    key = f"tables/{table}/empty.parquet"
    if not gens.storage.exists(key):
        gens.write_part(table, "empty", "empty", empty(table))
    return gens.storage.uri(key)


def table_view_sql(gens: GenerationStore, gen: Generation, table: str) -> str:
    uris = gens.part_uris(gen, table) or [_empty_part(gens, table)]
    files = ", ".join(_quote(u) for u in uris)
    return f"create or replace view {table} as select * from read_parquet([{files}])"


def analytic_view_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    return sorted(sql_dir.glob("*.sql"))


def _create_analytic_views(con: duckdb.DuckDBPyConnection, files: list[Path]) -> list[str]:
    """Views may use each other, so create them until every file has gone through."""
    remaining, created = list(files), []
    while remaining:
        failed: list[tuple[Path, Exception]] = []
        for path in remaining:
            try:
                con.execute(path.read_text())
                created.append(path.stem)
            except duckdb.Error as exc:
                failed.append((path, exc))
        if len(failed) == len(remaining):
            path, exc = failed[0]
            raise RuntimeError(f"{path.name}: {exc}") from exc
        remaining = [p for p, _ in failed]
    return created


def build_database(
    gens: GenerationStore, gen: Generation, target: Path, sql_dir: Path = SQL_DIR
) -> list[str]:
    """Write ``target`` for generation ``gen``; returns the names of the views created."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        con = duckdb.connect(
            str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY}
        )
        try:
            for table in SCHEMAS:
                con.execute(table_view_sql(gens, gen, table))
                failpoint("database-view")
            con.execute(
                "create or replace view warehouse_generation as select "
                f"{_quote(gen.id)} as generation_id, {_quote(gen.created_at)} as created_at"
            )
            analytic = _create_analytic_views(con, analytic_view_files(sql_dir))
            views = [*SCHEMAS, "warehouse_generation", *analytic]
            con.execute("checkpoint")
        finally:
            con.close()
        failpoint("database-replace")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return views
