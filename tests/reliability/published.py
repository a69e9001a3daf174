"""What a warehouse has published, and the checks every fault test makes after the fault.

"Nothing published is lost or changed" is checked byte for byte: the generation that was
current before the fault, its manifest and every Parquet part it references hash the same
afterwards, and every result digest it held is still held by whatever is current now.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from liger_warehouse.audit import checks
from liger_warehouse.store.generations import GenerationStore, RefreshBusy
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from tests.plain_duckdb import open_views

# Set at ingest time, so two refreshes of the same upstream legitimately differ in them.
VOLATILE_COLUMNS = {"ingested_at"}
LOCKS = ("refresh", "build", "publish")


def gens_of(root: Path) -> GenerationStore:
    return GenerationStore(Storage(root))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Published:
    """The current generation, the bytes it stands on, and its results."""

    current: str | None
    files: dict[str, str]
    results: frozenset[str]


def published(root: Path) -> Published:
    gens = gens_of(root)
    gen_id = gens.current_id()
    if gen_id is None:
        return Published(None, {}, frozenset())
    gen = gens.load(gen_id)
    keys = [f"generations/{gen_id}.json", *(p.file for parts in gen.tables.values() for p in parts)]
    files = {key: _sha(root / key) for key in keys}
    results = gens.read_table(gen, "fact_result", ["result_digest"]).column(0).to_pylist()
    return Published(gen_id, files, frozenset(results))


def assert_still_there(root: Path, before: Published) -> None:
    """The generation published before is byte-identical, and no result of it is gone."""
    for key, sha in before.files.items():
        assert (root / key).is_file(), f"{key} of generation {before.current} is gone"
        assert _sha(root / key) == sha, f"{key} of generation {before.current} changed"
    now = published(root)
    assert before.results <= now.results, f"{len(before.results - now.results)} results lost"


def assert_current_is_whole(root: Path) -> None:
    """Every part the current manifest names reads, and the integrity checks pass on it."""
    gens = gens_of(root)
    gen = gens.current()
    for table in gen.tables:
        gens.read_table(gen, table)
    failed = [o for o in checks.all_checks(gens, gen) if not o.passed]
    assert failed == [], failed


def view_counts(db: Path) -> dict[str, int]:
    """Row counts of every view of liger.duckdb, opened read-only as a reader would."""
    with open_views(db) as con:
        names = [
            r[0]
            for r in con.execute(
                "select view_name from duckdb_views() where not internal and schema_name = 'main'"
            ).fetchall()
        ]
        # View names come from the database itself; identifiers cannot be bound parameters.
        return {n: con.execute(f'select count(*) from "{n}"').fetchone()[0] for n in names}


def database_generation(db: Path) -> str:
    with open_views(db) as con:
        return con.execute("select generation_id from warehouse_generation").fetchone()[0]


def assert_locks_free(root: Path) -> None:
    """No lock is left held: a dead holder's flock went with its process."""
    gens = gens_of(root)
    for name in LOCKS:
        try:
            gens.try_lock(name).release()
        except RefreshBusy as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"lock {name!r} is still held: {exc}") from None


def assert_raw_store_sound(root: Path) -> None:
    """Every raw snapshot hashes to its address and every index entry points at one."""
    storage = Storage(root)
    raw = RawStore(storage)
    snapshots = {k for k in storage.list("raw/sha256")}
    for key in snapshots:
        content = "sha256:" + Path(key).name.removesuffix(".gz")
        raw.get(content)
    for key in storage.list("raw/index"):
        content = json.loads(storage.read_text(key))["content_digest"]
        assert RawStore._snapshot_key(content) in snapshots, f"{key} points at a missing snapshot"


def contents(root: Path) -> dict[str, list[str]]:
    """Every row of every table of the current generation, canonical and sorted.

    Two warehouses with equal ``contents`` hold the same digests, facts and flags; only the
    generation ids, part names and ingest times may differ.
    """
    gens = gens_of(root)
    gen = gens.current()
    out = {}
    for table in sorted(gen.tables):
        rows = gens.read_table(gen, table).to_pylist()
        out[table] = sorted(
            json.dumps({k: v for k, v in r.items() if k not in VOLATILE_COLUMNS}, sort_keys=True, default=str)
            for r in rows
        )
    return out


def cli_script() -> list[str]:
    """The installed ``liger-warehouse`` entry point, as an operator runs it."""
    script = Path(sys.executable).with_name("liger-warehouse")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "liger_warehouse.cli"]


def dagster_home(path: Path) -> Path:
    """A fresh instance directory (telemetry off: CI has no business phoning home)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return path


def cli_env(home: Path, **values: str) -> dict[str, str]:
    """The environment of a ``liger-warehouse`` subprocess: ours, minus any failpoint or token."""
    env = {k: v for k, v in os.environ.items() if k not in ("LIGER_WAREHOUSE_FAILPOINT", "GITHUB_TOKEN")}
    # Wide enough that rich never wraps a message the tests look for.
    env.update(DAGSTER_HOME=str(home), COLUMNS="1000", **values)
    return env


def cli_refresh(root: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
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
