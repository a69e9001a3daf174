"""What a lake has published, and the checks every fault test makes after the fault.

"Nothing published is lost or changed" is checked on the answers: the snapshot that was the
newest before the fault is still the newest (or, after a commit, the parent of the new one), and
every table and view of it answers with the same rows, compared as multisets.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from contextlib import closing
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb

from liger_warehouse.audit import checks
from liger_warehouse.cli.instance import dagster_instance
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import ALIAS, Lake
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from tests.conftest import env

# Set at ingest time, so two refreshes of the same upstream legitimately differ in them.
VOLATILE_COLUMNS = {"ingested_at"}
_TEMPLATE_LOCK = threading.Lock()


def lake_of(root: Path) -> Lake:
    return Lake.of(str(root))


def objects(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every table and view of the lake: name -> 'table' or 'view'."""
    rows = con.execute(
        "select table_name, table_type from information_schema.tables where table_catalog = ? order by 1", [ALIAS]
    ).fetchall()
    return {name: "view" if kind == "VIEW" else "table" for name, kind in rows}


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """The rows of one table or view, canonical (JSON, ingest times dropped) and sorted."""
    # Names come from the catalog itself; identifiers cannot be bound parameters.
    cur = con.execute(f'select * from "{name}"')
    columns = [c[0] for c in cur.description]
    keep = [i for i, c in enumerate(columns) if c not in VOLATILE_COLUMNS]
    return sorted(json.dumps({columns[i]: row[i] for i in keep}, sort_keys=True, default=str) for row in cur.fetchall())


def _answer(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return hashlib.sha256("\n".join(_rows(con, name)).encode()).hexdigest()


@dataclass(frozen=True)
class Published:
    """The newest snapshot, the answer of every table and view in it (a hash of its sorted
    rows), and its result digests."""

    snapshot: int | None
    answers: dict[str, str]
    results: frozenset[str]


def published(root: Path, lake: Lake | None = None) -> Published:
    lake = lake or lake_of(root)
    if not lake.exists():
        return Published(None, {}, frozenset())
    with open_lake(lake, read_only=True) as con:
        (snapshot,) = con.execute(f"from {ALIAS}.current_snapshot()").fetchone()
        names = objects(con)
        answers = {name: _answer(con, name) for name in names}
        results = (
            {d for (d,) in con.execute("select result_digest from fact_result").fetchall()}
            if "fact_result" in names
            else set()
        )
    return Published(snapshot, answers, frozenset(results))


def assert_unchanged(root: Path, before: Published, lake: Lake | None = None) -> None:
    """The newest snapshot is the one before, and every table and view answers as it did."""
    now = published(root, lake)
    assert now.snapshot == before.snapshot, f"snapshot {before.snapshot} is no longer the newest: {now.snapshot}"
    changed = sorted(
        n for n in before.answers.keys() | now.answers.keys() if before.answers.get(n) != now.answers.get(n)
    )
    assert changed == [], f"these answer differently: {changed}"


def assert_still_there(root: Path, before: Published, lake: Lake | None = None) -> None:
    """The snapshot published before still reads (time travel) with the same answers, and no
    result of it is gone from the newest."""
    lake = lake or lake_of(root)
    if before.snapshot is not None:
        with open_lake(lake, read_only=True, snapshot=before.snapshot) as con:
            then = {name: _answer(con, name) for name in objects(con)}
        assert then == before.answers, "the snapshot published before answers differently"
    now = published(root, lake)
    assert before.results <= now.results, f"{len(before.results - now.results)} results lost"


def assert_current_is_whole(root: Path, lake: Lake | None = None) -> None:
    """Every table and view of the newest snapshot reads, and the integrity checks pass on it."""
    with open_lake(lake or lake_of(root), read_only=True) as con:
        for name in objects(con):
            con.execute(f'select count(*) from "{name}"').fetchone()
        failed = [o for o in checks.all_checks(con) if not o.passed]
    assert failed == [], failed


def contents(root: Path, lake: Lake | None = None) -> dict[str, list[str]]:
    """Every row of every table of the newest snapshot, canonical and sorted.

    Two lakes with equal ``contents`` hold the same digests, facts and flags; only snapshot ids,
    file names and ingest times may differ.
    """
    with open_lake(lake or lake_of(root), read_only=True) as con:
        return {name: _rows(con, name) for name, kind in objects(con).items() if kind == "table"}


def duplicates(rows: list[str]) -> list[str]:
    """Rows that occur more than once."""
    return [row for row, n in Counter(rows).items() if n > 1]


def summary(root: Path, lake: Lake | None = None) -> dict:
    """The refresh summary the newest snapshot was committed with."""
    with open_lake(lake or lake_of(root), read_only=True) as con:
        (extra,) = con.execute(
            f"select commit_extra_info from ducklake_snapshots('{ALIAS}') order by snapshot_id desc limit 1"
        ).fetchone()
    return json.loads(extra)


def assert_raw_store_sound(root: Path) -> None:
    """Every raw snapshot hashes to its address and every index entry points at one."""
    storage = Storage(str(root))
    raw = RawStore(storage)
    snapshots = set(storage.list("raw/sha256"))
    for key in snapshots:
        raw.get("sha256:" + Path(key).name.removesuffix(".gz"))
    for key in storage.list("raw/index"):
        content = json.loads(storage.read_text(key))["content_digest"]
        assert RawStore._snapshot_key(content) in snapshots, f"{key} points at a missing snapshot"


def tree(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: relative path -> (size, mtime in ns, SHA-256)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            stat = path.stat()
            out[str(path.relative_to(root))] = (
                stat.st_size,
                stat.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out


def cli_script() -> list[str]:
    """The installed ``liger-warehouse`` entry point, as an operator runs it."""
    script = Path(sys.executable).with_name("liger-warehouse")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "liger_warehouse.cli"]


def dagster_home(path: Path) -> Path:
    """A fresh instance directory (telemetry off: CI has no business phoning home), its storage
    already created: a copy of one made once per process, since creating it costs a second."""
    # Without SQLite's WAL side files: a connection the template's instance left to the garbage
    # collector may delete them mid-copy, and the template's databases hold everything (below).
    # Made under a lock: threads asking at once (test_crash.py) would each set the process's
    # DAGSTER_HOME while making one, and create the same tables twice.
    with _TEMPLATE_LOCK:
        template = _empty_instance()
    shutil.copytree(template, path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    return path


@cache
def _empty_instance() -> Path:
    """Made as the CLI makes a ``$DAGSTER_HOME`` it finds empty (its configuration, telemetry off)."""
    path = Path(tempfile.mkdtemp(prefix="dagster-home-"))
    atexit.register(shutil.rmtree, path, True)
    with env(DAGSTER_HOME=str(path)), dagster_instance() as instance:
        instance.get_runs(limit=1)  # creates the run, event and schedule storage
    for db in path.rglob("*.db"):  # everything in the database file itself, none in its WAL
        with closing(sqlite3.connect(db)) as con:
            busy, _, _ = con.execute("pragma wal_checkpoint(truncate)").fetchone()
        assert busy == 0, f"{db}: a connection held its WAL, which the copies leave out"
    return path


def cli_env(home: Path, **values: str) -> dict[str, str]:
    """The environment of a ``liger-warehouse`` subprocess: ours, minus any failpoint or token."""
    drop = ("LIGER_WAREHOUSE_FAILPOINT", "LIGER_WAREHOUSE_PAUSE", "GITHUB_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # Wide enough that rich never wraps a message the tests look for.
    env.update(DAGSTER_HOME=str(home), COLUMNS="1000", **values)
    return env


def cli_refresh(root: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*cli_script(), "refresh", "--warehouse", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def step_failures(result) -> list[str]:
    """The innermost error message of every failed step of a Dagster run."""
    out = []
    for event in result.all_events:
        if event.is_step_failure:
            error = event.event_specific_data.error
            while error.cause is not None:
                error = error.cause
            out.append(error.message)
    return out
