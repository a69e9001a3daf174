"""The derived tables kept a part per run, source or build keep each part in the folder of its key
(``run=7644a0f/…``), so that DuckDB reads them as Hive partitions: a question about one run or one
build opens that run's or build's parts, not every part of the table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote

import duckdb

from liger_warehouse.analysis.model_rows import ORDER
from liger_warehouse.analysis.part_inputs import KEYED_PARTS, earlier_layout
from liger_warehouse.store.generations import GenerationStore, Part
from liger_warehouse.store.storage import Storage
from tests.plain_duckdb import open_views


def _files_read(con: duckdb.DuckDBPyConnection, sql: str, table: str) -> int:
    """How many parts of ``table`` the query opened: from EXPLAIN ANALYZE."""
    plan = json.loads(con.execute(f"explain (analyze, format json) {sql}").fetchall()[0][1])
    read = 0
    stack = list(plan["operator"])
    while stack:
        node = stack.pop()
        stack.extend(node.get("children", []))
        info = node.get("extra_info") or {}
        if f"/tables/{table}/" in str(info.get("Filename(s)", "")):
            read += int(info.get("Total Files Read", 0))
    return read


def test_each_keyed_part_is_in_the_folder_of_its_key(mirror_warehouse):
    gens = GenerationStore(Storage(str(mirror_warehouse.root)))
    gen = gens.current()
    for table in KEYED_PARTS:
        column = ORDER[table][0]
        parts = gen.parts(table)
        assert parts, table
        for part in parts:
            folder = Path(part.file).parent.name
            assert folder.startswith(f"{column}=") and unquote(folder.partition("=")[2]) == part.key, part
            rows = gens.read_parts(table, [part], [column])[column].unique().to_pylist()
            assert rows in ([], [part.key]), (part, rows)
    assert not earlier_layout(gen)
    flat = gen.parts("fact_run_point")[0]
    moved = Part(key=flat.key, file=f"tables/fact_run_point/{Path(flat.file).name}", rows=flat.rows)
    gen.tables["fact_run_point"] = [moved, *gen.parts("fact_run_point")[1:]]
    assert earlier_layout(gen), "a part outside its key's folder is the earlier layout: derived again"


def test_one_run_or_build_opens_its_parts_only(full_mirror_warehouse):
    # The whole snapshot's history, in more parts than the fixture cut's runs make.
    mirror_warehouse = full_mirror_warehouse
    gen = GenerationStore(Storage(str(mirror_warehouse.root))).current()
    assert min(len(gen.parts(t)) for t in ("fact_run_point", "fact_build_point", "fact_build_step")) > 20
    with open_views(mirror_warehouse.database) as con:
        run, build = con.execute("select run, build from fact_run_point order by run_seq desc limit 1").fetchone()
        assert _files_read(con, f"select * from fact_run_point where run = '{run}'", "fact_run_point") == 1
        assert _files_read(con, f"select * from fact_build_step where head_build = '{build}'", "fact_build_step") == 1
        # the names are resolved inside the macros: the runs and builds are known only when it runs
        assert 0 < _files_read(con, "select * from compare_runs('previous', 'latest')", "fact_run_point") <= 4
        versions = "select * from compare_versions('0.6.3', '0.7.0')"
        assert 0 < _files_read(con, versions, "fact_build_point") <= 4
        assert _files_read(con, versions, "fact_build_step") <= 1


def test_a_root_under_a_folder_named_like_a_partition_adds_no_column(mirror_warehouse, tmp_path: Path):
    """Read as Hive partitions, every `name=value` folder of a path would be a column; the views
    name the table's own columns, so a warehouse copied under `env=prod/` reads the same."""
    copy = tmp_path / "env=prod" / "warehouse"
    shutil.copytree(mirror_warehouse.root, copy, ignore=shutil.ignore_patterns("*.lock", "*.wal"))
    for table in KEYED_PARTS:
        with open_views(mirror_warehouse.database) as con:
            expected = con.execute(f"select * from {table} limit 0").description
        with open_views(copy / "liger.duckdb") as con:
            assert con.execute(f"select * from {table} limit 0").description == expected, table
            assert "env" not in [c[0] for c in con.execute(f"select * from {table} limit 0").description]
