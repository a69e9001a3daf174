"""``liger.duckdb``: one view per published table, then the analytic views kept in ``sql/``.

The file is rebuilt beside the old one and moved into place, so a reader opens either the
previous database or the new one. It is written in DuckDB's v1.0 storage format so that older
DuckDB builds, such as the standalone ``duckdb`` CLI, open it too.

The views name their Parquet parts relative to the warehouse root: the ``warehouse_files`` macro
puts ``file_search_path`` in front of each key of a view's list when the view is bound, and
refuses, saying how to set it, when it is unset. So a copied or moved warehouse reads its own parts, never those of
the place it was built in. Every connection this module opens sets ``file_search_path`` to its
root; ``connect`` also locks the connection down to reading that root (``lock_down``) and
checks user SQL before it runs (``read_only_statements``).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Sequence
from functools import cache
from hashlib import sha256
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from liger_warehouse import settings
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.serve.sql_files import SqlFile, load_order, read_by
from liger_warehouse.serve.table_views import ONE_FILE_MACRO, WAREHOUSE_FILES_MACRO, quote, table_view_sql
from liger_warehouse.store.storage import Storage

if TYPE_CHECKING:
    from liger_warehouse.store.generations import Generation, GenerationStore

# Reading commands (`sql`, `regressions`) open the views through this module and start in a
# fraction of a second: what only building views needs (PyArrow, via the table schemas and the
# generation store) is imported where it is used.

DATABASE = "liger.duckdb"
STORAGE_COMPATIBILITY = "v1.0.0"
# The repository's top-level sql/ (macros/, views/, derived/), installed as the package
# liger_warehouse.sql (setup.py).
SQL_DIR = Path(str(resources.files("liger_warehouse.sql")))
# Never fetch an extension at run time: a missing one is an error, not a download.
NO_DOWNLOADS = {"autoinstall_known_extensions": "false"}
# DuckDB's own default is 80% of RAM; the refresh's budget is 3 GiB for the whole process tree,
# so its queries spill to disk past this instead of growing (issue 5, docs/PERFORMANCE.md).
DEFAULT_MEMORY_LIMIT = "1GB"
# The one setting a locked-down session may still change (README: `set memory_limit`).
SESSION_SETTINGS = ("memory_limit",)
# A part is never rewritten, so a reader keeps the parts' Parquet footers between its queries
# (docs/PERFORMANCE.md, "Restatements kept at publish, and Parquet footers kept per session");
# DuckDB takes the setting at connect only with extension downloads off.
READER_CACHE = {**NO_DOWNLOADS, "parquet_metadata_cache": "true"}


class MissingViews(RuntimeError):
    """No analytic view to build: liger.duckdb would hold the tables and nothing else."""


def analytic_view_files(sql_dir: Path = SQL_DIR) -> list[SqlFile]:
    """The macros and views of ``sql_dir`` in their declared load order (``sql_files``); an
    error when there is none, so a broken install fails instead of publishing a database
    without its views."""
    from liger_warehouse.model.tables import SCHEMAS

    files = load_order(sql_dir, {*SCHEMAS, "warehouse_generation"})
    if not files:
        raise MissingViews(f"no analytic views (*.sql) in {sql_dir}: this installation lacks sql/; reinstall it")
    return files


def _create_analytic_views(con: duckdb.DuckDBPyConnection, files: list[SqlFile], sql_dir: Path) -> list[str]:
    """Each file after what it reads: the first that fails is the cause, and is named."""
    for file in files:
        try:
            con.execute(file.sql)
        except duckdb.Error as exc:
            raise RuntimeError(f"{file.label(sql_dir)}: {exc}") from exc
    return [file.name for file in files]


def create_views(
    con: duckdb.DuckDBPyConnection,
    gen: Generation,
    sql_dir: Path = SQL_DIR,
    reads: set[str] | None = None,
    *,
    readers: bool = False,
) -> list[str]:
    """Every view of generation ``gen`` on ``con`` (only the macros and views that ``reads``
    needs, when given; through its readers' copies for ``readers``); returns their names."""
    from liger_warehouse.model.tables import SCHEMAS

    for table in SCHEMAS:
        con.execute(table_view_sql(gen, table, readers))
    con.execute(
        "create or replace view warehouse_generation as select "
        f"{quote(gen.id)} as generation_id, {quote(gen.created_at)} as created_at, "
        f"{quote(sql_version(sql_dir))} as sql_version"
    )
    files = analytic_view_files(sql_dir)
    analytic = _create_analytic_views(con, files if reads is None else read_by(files, reads), sql_dir)
    return [*SCHEMAS, "warehouse_generation", *analytic]


def build_database(gens: GenerationStore, gen: Generation, target: Path, sql_dir: Path = SQL_DIR) -> list[str]:
    """Write ``target`` for generation ``gen``; returns the names of the views created. Refuses
    a generation derived before one of today's derived tables existed (``liger_duckdb``
    materialized alone after an upgrade, before a refresh derived it)."""
    _has_derived_tables(gen, gens.storage)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex}")
    try:
        con = open_duckdb(gens.storage, str(tmp), config={"storage_compatibility_version": STORAGE_COMPATIBILITY})
        try:
            views = create_views(con, gen, sql_dir, readers=True)
            failpoint("database-view")  # the new file built, not yet in place
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
    storage: Storage,
    path: str = ":memory:",
    read_only: bool = False,
    config: dict | None = None,
    *,
    reader: bool | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection that reads the warehouse's objects where they are; ``reader`` (by default
    ``read_only``) says it serves a command that only reads, which makes no spill folder and
    keeps the parts' footers between queries (``READER_CACHE``).

    ``file_search_path`` is the root, so the views resolve their parts there (``warehouse_files``;
    a writable connection defines that macro). For an object-store root the root's fsspec
    filesystem (s3fs) is registered with DuckDB, so ``s3://`` URIs resolve through it: DuckDB's
    own ``httpfs`` extension would be a download at run time, and no pip package ships one for
    this DuckDB version (see docs/STORAGE.md).
    """
    reading = read_only if reader is None else reader
    cache = READER_CACHE if reading else {}
    settings = {**NO_DOWNLOADS, **_memory(reading), **cache, "file_search_path": storage.url, **(config or {})}
    con = duckdb.connect(path, read_only=read_only, config=settings)
    if not storage.is_local:
        from liger_warehouse.store.read_cache import ImmutableReadCache

        reader = ImmutableReadCache(storage.fs, storage.root, _local_dir(storage) / "parts")
        # DuckDB shares one instance per database file within a process: another open
        # connection to this file has registered it already.
        if not any(con.filesystem_is_registered(name) for name in reader.protocol):
            con.register_filesystem(reader)
    if not read_only:
        con.execute(WAREHOUSE_FILES_MACRO)
    return con


def lock_down(con: duckdb.DuckDBPyConnection, storage: Storage, allow_read: Sequence[Path] = ()) -> None:
    """After this, ``con`` reads the warehouse's own files and those of ``allow_read``, loads
    no extension, attaches nothing, and its settings stay as they are (``SESSION_SETTINGS``
    apart), for good.

    DuckDB lets a connection write where it may read, so this alone does not make it
    read-only: user SQL must also pass ``read_only_statements``. Spill files still go to the
    connection's ``temp_directory``.
    """
    paths = [p.resolve() for p in allow_read]
    readable = {
        "allowed_directories": [storage.uri(""), *(f"{p}/" for p in paths if p.is_dir())],
        "allowed_paths": [str(p) for p in paths if not p.is_dir()],
    }
    if con.execute("select current_setting('lock_configuration')").fetchone()[0]:
        # DuckDB shares one instance per database file within a process: another open
        # connection to this file locked it already, for every connection to it.
        for name, wanted in readable.items():
            held = con.execute(f"select current_setting('{name}')").fetchone()[0]
            if not set(wanted) <= set(held):
                raise RuntimeError(f"{storage.url} is open in this process already, without {name} {wanted}")
        return
    for name, value in readable.items():
        con.execute(f"set {name} = ?", [value])
    con.execute("set allowed_configs = ?", [list(SESSION_SETTINGS)])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def _memory(reader: bool) -> dict[str, str]:
    """DuckDB's memory limit, and where it spills beyond it (local scratch, also for s3 roots).

    DuckDB creates the spill folder only when a query first spills, and removes it on close,
    but never its parents. A writer makes them. A reader creates no file unless it spills: it
    spills into the cache directory when that exists, else into the system's temporary one, in
    a folder of its own process.
    """
    s = settings.current()
    scratch = cache_dir(s)
    if reader:
        spill = (scratch if scratch.is_dir() else Path(tempfile.gettempdir())) / f"duckdb-spill-{os.getpid()}"
    else:
        spill = scratch / "duckdb-spill"
        spill.mkdir(parents=True, exist_ok=True)
    return {"memory_limit": s.duckdb_memory_limit or DEFAULT_MEMORY_LIMIT, "temp_directory": str(spill)}


def cache_dir(s: settings.Settings | None = None) -> Path:
    """Local scratch space: ``$LIGER_WAREHOUSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/liger-warehouse``
    (of ``s``, when the caller has the settings already)."""
    s = s or settings.current()
    base = s.cache_dir or os.path.join(s.xdg_cache_home or "~/.cache", "liger-warehouse")
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


def connect(storage: Storage, allow_read: Sequence[Path] = ()) -> duckdb.DuckDBPyConnection:
    """A locked-down connection to the published views of ``storage``, wherever it lives.

    A liger.duckdb built before its views named parts relative to the root names them by
    absolute path, which is the original's when the warehouse was copied or moved: its views
    are rebuilt in memory from the warehouse's own manifest instead (a reader writes no file;
    the next refresh rewrites it).
    """
    con = open_duckdb(storage, str(fetch_database(storage)), read_only=True)
    if not _reads_its_root(con):
        from liger_warehouse.store.generations import GenerationStore

        con.close()
        gen = GenerationStore(storage).current()
        _has_derived_tables(gen, storage)
        con = open_duckdb(storage, reader=True)
        create_views(con, gen, readers=True)
    lock_down(con, storage, allow_read)
    return con


def _has_derived_tables(gen: Generation, storage: Storage) -> None:
    """Refuses a generation derived before some of today's derived tables existed: views over
    a missing table would answer with no rows, not an error."""
    from liger_warehouse.model.tables import SQL_MODELS

    if gen.parts("fact_result") and (missing := [t for t in SQL_MODELS if t not in gen.tables]):
        raise FileNotFoundError(
            f"{storage.url} was derived before {', '.join(missing)} existed: run `liger-warehouse refresh` first"
        )


def _reads_its_root(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the database's views name their parts through ``warehouse_files`` (or, written
    before it, ``warehouse_file``).

    Calling the macro answers in a millisecond; listing ``duckdb_functions()`` takes tens of
    them (every built-in function), so it is asked only of a database without the macro.
    """
    try:
        con.execute("select warehouse_files([])")
        return True
    except duckdb.CatalogException:
        sql = "select count(*) from duckdb_functions() where function_name = ? and not internal"
        return con.execute(sql, [ONE_FILE_MACRO]).fetchone()[0] > 0


@cache
def sql_version(sql_dir: Path = SQL_DIR) -> str:
    """A digest of every file of ``sql_dir``: what a database's views were built from
    (``warehouse_generation.sql_version``)."""
    texts = [p.read_text() for p in sorted(sql_dir.rglob("*.sql"))]
    return sha256("\0".join(texts).encode()).hexdigest()[:16]


def views_current(storage: Storage, path: Path, generation_id: str) -> bool:
    """Whether the database at ``path`` shows generation ``generation_id`` through views of this
    code's ``sql/``. Not when it opens with none, names its parts by absolute path (written
    before they were relative) or does not say which SQL built it (written before it did)."""
    if not path.exists():
        return False
    try:
        with open_duckdb(storage, str(path), read_only=True) as con:
            if not _reads_its_root(con):
                return False
            shown = con.execute("select generation_id, sql_version from warehouse_generation").fetchone()
    except duckdb.Error:
        return False
    return shown == (generation_id, sql_version())


def rebuild_if_stale(gens: GenerationStore, path: Path) -> list[str] | None:
    """Rebuild the views unless they show ``CURRENT`` through this code's ``sql/``.

    A refresh killed between the switch and the views rebuild leaves them behind, and the
    next refresh finds nothing new upstream, so nothing else would ever rebuild them; nor would
    anything rebuild views whose SQL changed in an upgrade, when no derived table reads it.
    Returns the views created, or None when they were current.
    """
    current = gens.current_id()
    if current is None or views_current(gens.storage, path, current):
        return None
    views = build_database(gens, gens.load(current), path)
    publish_database(gens.storage, path)
    return views
