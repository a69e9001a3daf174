"""DuckLake's own maintenance cleans what a killed refresh left behind: after a refresh dies
before its commit, ``maintain`` (the ``lake_maintenance`` asset) deletes the files no snapshot
references, merges small files, expires snapshots past the retention, and every answer stays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg

from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.lake.maintenance import maintain
from liger_warehouse.model.tables import STORED
from tests.conftest import MIRROR, OLDEST_MIRROR, env
from tests.reliability.direct import refresh_lake

PROJECT = Path(__file__).resolve().parents[1]


def _on_disk(lake: Lake) -> set[str]:
    return {str(p) for p in Path(lake.data).rglob("*.parquet")}


def _referenced(lake: Lake) -> set[str]:
    """The files the newest snapshot reads: data and delete files of every table."""
    with open_lake(lake, read_only=True) as con:
        tables = [
            t for (t,) in con.execute("select table_name from duckdb_tables() where database_name = 'liger'").fetchall()
        ]
        files: set[str] = set()
        for table in tables:
            rows = con.execute(f"select data_file, delete_file from ducklake_list_files('liger', '{table}')").fetchall()
            files |= {f for row in rows for f in row if f}
    return files


def _answers(lake: Lake) -> dict[str, list[tuple]]:
    with open_lake(lake, read_only=True) as con:
        return {t: sorted(map(str, con.execute(f"select * from {t}").fetchall())) for t in STORED}


def test_maintenance_deletes_what_a_killed_refresh_left_and_changes_no_answer(tmp_path):
    root = tmp_path / "warehouse"
    lake = Lake.of(str(root))
    refresh_lake(str(root), str(OLDEST_MIRROR), lake)
    before = _answers(lake)
    killed = subprocess.run(
        [sys.executable, "-m", "tests.reliability.direct", str(root), str(MIRROR)],
        cwd=PROJECT,
        env={**os.environ, "LIGER_WAREHOUSE_FAILPOINT": "publish"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = _on_disk(lake) - _referenced(lake)
    assert left, "the killed refresh wrote files it never committed"

    done = maintain(lake, keep="0 seconds", grace="0 seconds")
    assert done.deleted >= len(left)
    assert _on_disk(lake) == _referenced(lake), "every file left is one the newest snapshot reads"
    assert _answers(lake) == before


def test_the_maintenance_asset_runs_it_in_its_own_job(tmp_path):
    from pipelines.definitions import load

    root = tmp_path / "warehouse"
    refresh_lake(str(root), str(OLDEST_MIRROR), Lake.of(str(root)))
    with env(LIGER_WAREHOUSE_DIR=str(root)), dg.DagsterInstance.ephemeral() as instance:
        result = load().resolve_job_def("maintenance").execute_in_process(instance=instance)
    assert result.success
    [event] = result.get_asset_materialization_events()
    assert event.asset_key.path == ["lake_maintenance"]
    assert set(event.materialization.metadata) >= {"snapshots_expired", "files_merged", "files_deleted"}
