"""``liger.duckdb``: one view per published table, then the analytic views kept in ``sql/``.

The file is rebuilt beside the old one and moved into place, so a reader opens either the
previous database or the new one. It is written in DuckDB's v1.0 storage format so that older
DuckDB builds, such as the standalone ``duckdb`` CLI, open it too.
"""

from __future__ import annotations

import os
import uuid
from hashlib import sha256
from importlib import resources
from pathlib import Path

import duckdb

from pipelines.failpoints import failpoint
from pipelines.store.generations import Generation, GenerationStore
from pipelines.store.objectstore import ImmutableReadCache
from pipelines.store.storage import Storage
from pipelines.tables import SCHEMAS, empty

DATABASE = "liger.duckdb"
STORAGE_COMPATIBILITY = "v1.0.0"
# The repository's top-level sql/, installed as the package pipelines.sql (setup.py).
SQL_DIR = Path(str(resources.files("pipelines.sql")))
CACHE_DIR = "LIGER_WAREHOUSE_CACHE_DIR"
# Never fetch an extension at run time: a missing one is an error, not a download.
NO_DOWNLOADS = {"autoinstall_known_extensions": "false"}
# DuckDB's own default is 80% of RAM; the refresh's budget is 3 GiB for the whole process tree,
# so its queries spill to disk past this instead of growing (issue 5, docs/PERFORMANCE.md).
MEMORY_LIMIT = "LIGER_WAREHOUSE_DUCKDB_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "1GB"


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


class MissingViews(RuntimeError):
    """No analytic view to build: liger.duckdb would hold the tables and nothing else."""


def analytic_view_files(sql_dir: Path = SQL_DIR) -> list[Path]:
    """Every ``.sql`` file of ``sql_dir``; an error when there is none, so a broken install
    fails instead of publishing a database without its views."""
    files = sorted(sql_dir.glob("*.sql"))
    if not files:
        raise MissingViews(f"no analytic views (*.sql) in {sql_dir}: this installation lacks sql/; reinstall it")
    return files


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


def build_database(gens: GenerationStore, gen: Generation, target: Path, sql_dir: Path = SQL_DIR) -> list[str]:
    """Write ``target`` for generation ``gen``; returns the names of the views created."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        con = open_duckdb(gens.storage, str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
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


def open_duckdb(
    storage: Storage, path: str = ":memory:", read_only: bool = False, config: dict | None = None
) -> duckdb.DuckDBPyConnection:
    """A connection that reads the warehouse's objects where they are.

    For an object-store root the root's fsspec filesystem (s3fs) is registered with DuckDB, so
    ``s3://`` URIs resolve through it: DuckDB's own ``httpfs`` extension would be a download at
    run time, and no pip package ships one for this DuckDB version (see docs/STORAGE.md).
    """
    con = duckdb.connect(path, read_only=read_only, config={**NO_DOWNLOADS, **_memory(), **(config or {})})
    if not storage.is_local:
        con.register_filesystem(ImmutableReadCache(storage.fs, storage.root, _local_dir(storage) / "parts"))
    return con


def _memory() -> dict[str, str]:
    """DuckDB's memory limit, and where it spills beyond it (local scratch, also for s3 roots)."""
    spill = cache_dir() / "duckdb-spill"
    spill.mkdir(parents=True, exist_ok=True)
    return {"memory_limit": os.getenv(MEMORY_LIMIT) or DEFAULT_MEMORY_LIMIT, "temp_directory": str(spill)}


def cache_dir() -> Path:
    """Local scratch space: ``$LIGER_WAREHOUSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/liger-warehouse``."""
    base = os.getenv(CACHE_DIR) or os.path.join(os.getenv("XDG_CACHE_HOME") or "~/.cache", "liger-warehouse")
    return Path(base).expanduser()


def _local_dir(storage: Storage) -> Path:
    """This host's cache of an object-store root."""
    return cache_dir() / sha256(storage.url.encode()).hexdigest()[:16]


def database_path(storage: Storage) -> Path:
    """Where liger.duckdb is opened: in the root when it is local; for an object-store root, a
    local copy in the cache, since DuckDB cannot open a database file on an object store."""
    if storage.is_local:
        return Path(storage.root) / DATABASE
    return _local_dir(storage) / DATABASE


def publish_database(storage: Storage, path: Path) -> None:
    """Upload a freshly built database to ``<root>/liger.duckdb`` (one PUT: atomic) for an
    object-store root, so every host reads the same views; a local root has it in place."""
    if not storage.is_local:
        storage.write_bytes(DATABASE, path.read_bytes())


def fetch_database(storage: Storage) -> Path:
    """The local liger.duckdb of ``storage``, downloading the published copy for an object store."""
    path = database_path(storage)
    if storage.is_local:
        if not path.exists():
            raise FileNotFoundError(f"no database at {path}: run `liger-warehouse refresh` first")
        return path
    if not storage.exists(DATABASE):
        raise FileNotFoundError(f"no database at {storage.uri(DATABASE)}: run `liger-warehouse refresh` first")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Replace the copy whole: a reader that has the old one open keeps reading it.
    tmp = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_bytes(storage.read_bytes(DATABASE))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def connect(storage: Storage) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the published views, wherever the warehouse lives."""
    return open_duckdb(storage, str(fetch_database(storage)), read_only=True)


def shown_generation(storage: Storage, path: Path) -> str | None:
    """The generation the database at ``path`` shows; None when there is none that opens."""
    if not path.exists():
        return None
    try:
        with open_duckdb(storage, str(path), read_only=True) as con:
            return con.execute("select generation_id from warehouse_generation").fetchone()[0]
    except duckdb.Error:
        return None


def rebuild_if_stale(gens: GenerationStore, path: Path) -> list[str] | None:
    """Rebuild the views when they show another generation than ``CURRENT``.

    A refresh killed between the switch and the views rebuild leaves them behind, and the
    next refresh finds nothing new upstream, so nothing else would ever rebuild them.
    Returns the views created, or None when they were current.
    """
    current = gens.current_id()
    if current is None or shown_generation(gens.storage, path) == current:
        return None
    views = build_database(gens, gens.current(), path)
    publish_database(gens.storage, path)
    return views
