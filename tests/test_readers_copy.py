"""Readers' copies (liger_warehouse/serve/readers_copy.py): one sorted file per table that readers
scan whole, read with the parts written since, giving the rows of the parts and no others."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from liger_warehouse.serve import readers_copy
from liger_warehouse.serve.database import open_duckdb
from liger_warehouse.serve.table_views import parts_select, readers_select
from liger_warehouse.store.generations import Generation, GenerationStore, Part, ReadersCopy, key_folder
from liger_warehouse.store.storage import Storage
from tests.plain_duckdb import open_views

TABLE = "fact_speedup_point"


def _same_rows(gens: GenerationStore, gen: Generation, table: str) -> int:
    """The rows readers read of ``table`` equal its parts' rows (as multisets); their count."""
    with open_duckdb(gens.storage) as con:
        readers, parts = readers_select(gen, table), parts_select(table, gen.parts(table))
        for a, b in ((readers, parts), (parts, readers)):
            difference = f"select * from ({a}) except all select * from ({b})"
            assert con.execute(f"select count(*) from ({difference})").fetchone() == (0,)
        [(count,)] = con.execute(f"select count(*) from ({readers})").fetchall()
    assert count == gen.rows(table)
    return count


def _copied(source: Path, tmp_path: Path) -> GenerationStore:
    root = tmp_path / "warehouse"
    shutil.copytree(source, root)
    return GenerationStore(Storage(root))


@pytest.fixture
def copied(mirror_warehouse, tmp_path: Path) -> GenerationStore:
    """A copy of the reference warehouse, for tests that write parts."""
    return _copied(mirror_warehouse.root, tmp_path)


# The copies serve tables in many parts: the whole snapshot's history has enough of them for every
# table, the fixture cut's not (these tests are the larger tier).


@pytest.fixture
def full_copied(full_mirror_warehouse, tmp_path: Path) -> GenerationStore:
    return _copied(full_mirror_warehouse.root, tmp_path)


def test_the_reference_warehouse_reads_its_tables_through_their_copies(full_mirror_warehouse):
    mirror_warehouse = full_mirror_warehouse
    gens = GenerationStore(Storage(mirror_warehouse.root))
    gen = gens.current()
    assert set(gen.readers) == set(readers_copy.ORDER), "the real history has enough parts for a copy"
    with open_views(mirror_warehouse.database) as con:
        for table, copy in gen.readers.items():
            [(sql,)] = con.execute("select sql from duckdb_views() where view_name = ?", [table]).fetchall()
            assert copy.file in sql, f"{table}'s view reads its copy"
            assert copy.covers == [p for p in gen.parts(table) if p.rows]
    for table in gen.readers:
        assert _same_rows(gens, gen, table) > 0


def _scans(node: dict | list) -> list[dict]:
    """The Parquet scans of a plan from ``explain (format json)``, as their details."""
    if isinstance(node, list):
        return [scan for child in node for scan in _scans(child)]
    own = [node.get("extra_info", {})] if node.get("name") == "READ_PARQUET" else []
    return own + _scans(node.get("children", []))


def test_a_question_on_one_kernel_and_gpu_filters_the_scan_of_the_stored_steps(full_mirror_warehouse):
    """The steps' copy is sorted by kernel and GPU, and a filter on them reaches the copy's scan,
    so that at scale the other kernels' row groups are skipped (the real history's copy is one
    row group; docs/PERFORMANCE.md measures the skip at 10^7 results)."""
    mirror_warehouse = full_mirror_warehouse
    gen = GenerationStore(Storage(mirror_warehouse.root)).current()
    copy = gen.readers["fact_build_step"]
    labels = pq.read_table(mirror_warehouse.root / copy.file, columns=["kernel", "gpu"])
    assert labels.to_pylist() == sorted(labels.to_pylist(), key=lambda row: (row["kernel"], row["gpu"]))
    with open_views(mirror_warehouse.database) as con:
        kernel, gpu = con.execute("select kernel, gpu from dim_series group by all order by count(*) desc").fetchone()
        [(_, plan)] = con.execute(
            "explain (format json) select * from regressions where kernel = ? and gpu = ?", [kernel, gpu]
        ).fetchall()
    [steps] = [scan for scan in _scans(json.loads(plan)) if "head_build" in scan.get("Projections", [])]
    assert f"(kernel = '{kernel}')" in steps["Filters"] and f"(gpu = '{gpu}')" in steps["Filters"]


def _write(gens: GenerationStore, table: str, key: str, name: str, rows: pa.Table) -> Part:
    return gens.write_part(table, key, f"{key_folder('build', key)}/{name}", rows)


def test_replaced_removed_and_new_parts_are_read_beside_the_copy(copied):
    """Readers see the rows of the generation's parts: a replaced key's rows from its new part, a
    removed key's rows nowhere, a new key's from its part, the others from the copy."""
    gen = copied.current()
    parts = gen.parts(TABLE)
    removed, replaced, model = parts[0], parts[1], parts[2]
    fewer = copied.read_parts(TABLE, [replaced])
    fewer = fewer.slice(0, fewer.num_rows // 2)
    new_rows = copied.read_parts(TABLE, [model])
    new_rows = new_rows.set_column(
        new_rows.schema.get_field_index("build"), "build", pa.array(["9.9.9"] * len(new_rows))
    )
    changed = [
        _write(copied, TABLE, replaced.key, "replaced", fewer),
        *parts[2:],
        _write(copied, TABLE, "9.9.9", "new", new_rows),
    ]
    later = replace(gen, tables={**gen.tables, TABLE: changed})
    count = _same_rows(copied, later, TABLE)
    assert count == gen.rows(TABLE) - removed.rows - replaced.rows + fewer.num_rows + new_rows.num_rows
    select = readers_select(later, TABLE)
    assert gen.readers[TABLE].file in select and "not in" in select, "the copy still serves, less two keys"


def _parts(count: int, rows: int = 100, prefix: str = "p") -> list[Part]:
    return [Part(key=f"{prefix}{i}", file=f"tables/t/k={prefix}{i}/{i}.parquet", rows=rows) for i in range(count)]


def test_a_copy_is_written_again_only_when_what_is_read_beside_it_adds_up():
    parts = _parts(40)
    order = ("k",)
    copy = ReadersCopy(file="tables/t/readers/x.parquet", rows=4000, order=["k"], covers=parts)
    assert readers_copy.needs_rewrite(None, parts, order)
    assert not readers_copy.needs_rewrite(copy, parts, order)
    # a nightly run a night: one small part beside the copy
    assert not readers_copy.needs_rewrite(copy, [*parts, *_parts(1, prefix="n")], order)
    # more parts beside it than MAX_PARTS_BESIDE, however small
    many = _parts(readers_copy.MAX_PARTS_BESIDE + 1, rows=1, prefix="n")
    assert readers_copy.needs_rewrite(copy, [*parts, *many], order)
    # a quarter of its rows replaced (their keys read from the new parts, the copy's rows unread)
    replaced = _parts(10, prefix="p")
    replaced = [replace(p, file=p.file.replace(".parquet", "-new.parquet")) for p in replaced]
    assert readers_copy.needs_rewrite(copy, [*replaced, *parts[10:]], order)
    assert not readers_copy.needs_rewrite(copy, [*replaced[:5], *parts[5:]], order)
    # a copy sorted otherwise (by an earlier version)
    assert readers_copy.needs_rewrite(copy, parts, ("k", "other"))


def test_publishing_keeps_the_copies_that_serve_and_writes_those_that_do_not(full_copied):
    copied = full_copied
    gen = copied.current()
    staged = replace(gen, id="next", parent=gen.id, readers={})
    assert readers_copy.with_readers_copies(copied, staged, gen) == {}
    assert staged.readers == gen.readers, "nothing changed: the parent's copies serve"

    few = replace(gen, id="few", parent=gen.id, readers={}, tables={**gen.tables, TABLE: gen.parts(TABLE)[:5]})
    assert readers_copy.with_readers_copies(copied, few, gen) == {}
    assert TABLE not in few.readers, "a table in few parts is read as it is"

    fresh = replace(gen, id="fresh", parent=gen.id, readers={})
    written = readers_copy.with_readers_copies(copied, fresh, replace(gen, readers={}))
    assert set(written) == set(readers_copy.ORDER)
    for table in readers_copy.ORDER:
        # the same rows in the same order: the same file
        assert fresh.readers[table] == gen.readers[table]
