"""Connections to a lake: a writer's, in which one refresh is one transaction, and a reader's,
read-only and locked down to the lake's own files.

A reader attaches the catalog ``READ_ONLY`` (at an earlier snapshot for time travel): it never
writes, and sees one committed snapshot from its first query to its last. On a SQLite catalog a
commit waits for readers' open transactions (``_lock_wait_ms``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
from filelock import FileLock

from liger_warehouse import settings
from liger_warehouse.lake import extensions
from liger_warehouse.lake.location import ALIAS, Lake, NoWarehouse

# Never fetch an extension at run time: a missing one is an error, not a download.
NO_DOWNLOADS = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
# DuckDB's own default is 80% of RAM; the refresh's budget is 3 GiB for the whole process tree,
# so its queries spill to disk past this instead of growing (docs/PERFORMANCE.md).
DEFAULT_MEMORY_LIMIT = "1GB"
# The one setting a locked-down session may still change (README: `set memory_limit`).
SESSION_SETTINGS = ("memory_limit",)


def cache_dir(s: settings.Settings | None = None) -> Path:
    """Local scratch space: ``$LIGER_WAREHOUSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/liger-warehouse``."""
    s = s or settings.current()
    base = s.cache_dir or os.path.join(s.xdg_cache_home or "~/.cache", "liger-warehouse")
    return Path(base).expanduser()


def _resources(s: settings.Settings, reader: bool) -> dict[str, str]:
    """The memory limit, where queries spill beyond it, and the threads when set. Each process
    spills into a folder of its own, which DuckDB creates when a query spills and removes when the
    connection closes: two writers sharing one deleted each other's files, and DuckDB aborts on
    that. A writer makes the cache directory; a reader creates nothing unless it spills."""
    scratch = cache_dir(s)
    if not reader:
        scratch.mkdir(parents=True, exist_ok=True)
    spill = (scratch if scratch.is_dir() else Path(tempfile.gettempdir())) / f"duckdb-spill-{os.getpid()}"
    threads = {"threads": str(s.duckdb_threads)} if s.duckdb_threads else {}
    return {"memory_limit": s.duckdb_memory_limit or DEFAULT_MEMORY_LIMIT, "temp_directory": str(spill), **threads}


def _lock_wait_ms(s: settings.Settings, reader: bool) -> int:
    """How long a SQLite catalog waits for a lock (SQLite's own default, 5 s, made a refresh fail
    beside one slow reader): a commit waits for the readers' transactions it finds, while readers
    arriving meanwhile queue behind it, so they wait twice as long as a commit does."""
    wait = s.commit_wait_seconds * 1000
    return round(2 * wait if reader else wait)


def _s3_secret(con: duckdb.DuckDBPyConnection, lake: Lake) -> None:
    """Credentials and endpoint for an ``s3://`` data path, from the settings (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``LIGER_WAREHOUSE_S3_ENDPOINT``)."""
    s = settings.current()
    options = {}
    if s.aws_access_key_id:
        options |= {"key_id": s.aws_access_key_id, "secret": s.aws_secret_access_key or ""}
    if s.aws_region:
        options["region"] = s.aws_region
    if s.s3_endpoint:
        scheme, _, host = s.s3_endpoint.rpartition("://")
        options |= {"endpoint": host.rstrip("/"), "url_style": "path", "use_ssl": scheme != "http"}
    given = "".join(f", {name} {_literal(value)}" for name, value in options.items())
    con.execute(f"create or replace secret liger_data (type s3{given})")


def _literal(value: str | bool) -> str:
    """A SQL literal: a secret's options take no bound parameters."""
    if isinstance(value, bool):
        return str(value).lower()
    return "'" + value.replace("'", "''") + "'"


def open_lake(
    lake: Lake,
    *,
    read_only: bool = False,
    snapshot: int | None = None,
    at_time: str | None = None,
    config: dict | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with ``lake`` attached as ``liger`` and in use. A writer creates the
    catalog when there is none; a reader refuses (``NoWarehouse``)."""
    if read_only and not lake.exists():
        raise NoWarehouse(f"no warehouse at {lake.catalog}: run `liger-warehouse refresh` first")
    s = settings.current()
    names = lake.extensions()
    con = duckdb.connect(
        config={**NO_DOWNLOADS, **extensions.connect_config(names), **_resources(s, read_only), **(config or {})}
    )
    try:
        extensions.load(con, names)
        if not lake.data_is_local:
            _s3_secret(con, lake)
        elif not read_only:
            Path(lake.data).mkdir(parents=True, exist_ok=True)
        if not read_only and lake.catalog_file is not None:
            lake.catalog_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            con.execute(lake.attach_sql(read_only, snapshot, at_time, _lock_wait_ms(s, read_only)))
        except duckdb.InvalidInputException as exc:
            # A PostgreSQL database may exist without a lake in it: a reader creates none.
            if read_only and "does not exist" in str(exc):
                raise NoWarehouse(f"no warehouse in {lake.catalog}: run `liger-warehouse refresh` first") from None
            raise
        con.execute(f"use {ALIAS}")
    except BaseException:
        con.close()
        raise
    return con


@contextmanager
def writer_turn(lake: Lake) -> Iterator[None]:
    """Writers of a SQLite catalog take turns (a lock file beside it): SQLite refuses a commit
    while another writer's transaction reads, and DuckDB's SQLite scanner then keeps that
    refused commit's lock until the process ends. A PostgreSQL catalog orders its writers itself."""
    file = lake.catalog_file
    if file is None:
        yield
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{file}.lock"):
        yield


def lock_down(con: duckdb.DuckDBPyConnection, lake: Lake, allow_read: Sequence[Path] = ()) -> None:
    """After this, ``con`` reads the lake's own files and those of ``allow_read``, loads no
    extension, and its settings stay as they are (``SESSION_SETTINGS`` apart), for good.

    DuckDB still lets a locked connection ATTACH or COPY where it may read, so user SQL must
    also pass ``read_only_statements``."""
    paths = [p.resolve() for p in allow_read]
    con.execute("set allowed_directories = ?", [[lake.data, *(f"{p}/" for p in paths if p.is_dir())]])
    con.execute("set allowed_paths = ?", [[str(p) for p in paths if not p.is_dir()]])
    con.execute("set allowed_configs = ?", [list(SESSION_SETTINGS)])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def read_lake(lake: Lake, as_of: str | None = None, allow_read: Sequence[Path] = ()) -> duckdb.DuckDBPyConnection:
    """A locked-down reader of ``lake``, at snapshot ``as_of`` (a snapshot id or a timestamp)
    when given, else the newest."""
    snapshot, at_time = parse_as_of(as_of)
    con = open_lake(lake, read_only=True, snapshot=snapshot, at_time=at_time)
    lock_down(con, lake, allow_read)
    return con


def parse_as_of(as_of: str | None) -> tuple[int | None, str | None]:
    """``--as-of``: a snapshot id (an integer) or a timestamp DuckDB understands."""
    if as_of is None:
        return None, None
    text = as_of.strip()
    return (int(text), None) if text.isdigit() else (None, text)


def held_revisions(lake: Lake) -> set[str]:
    """The revision digests the lake holds (none before its first publish)."""
    try:
        con = open_lake(lake, read_only=True)
    except NoWarehouse:
        return set()
    with con:
        try:
            return {d for (d,) in con.execute("select revision_digest from dim_upstream_revision").fetchall()}
        except duckdb.CatalogException:
            return set()


def snapshot_of(con: duckdb.DuckDBPyConnection) -> int:
    """The snapshot ``con`` reads: what a report or export made from it is named by."""
    (snapshot,) = con.execute(f"from {ALIAS}.current_snapshot()").fetchone()
    return snapshot


def latest_snapshot(lake: Lake) -> int:
    """The lake's newest snapshot."""
    with open_lake(lake, read_only=True) as con:
        return snapshot_of(con)
