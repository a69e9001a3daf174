"""What each derived table costs a publish: its statement timed alone on a built lake, with the
rows it makes, then the copy into the lake timed with the Parquet bytes it writes.

    python -m benchmarks.derived_cost --warehouse ROOT [--zstd] [--memory-limit 1GB]
        [--rewrite fact_result,...] [--json FILE]

Every publish recreates every table of ``sql/derived/`` whole, in load order (so each reads the
tables before it as this publish made them): as a temporary table, from temporary copies of the
stored tables they read, each then copied into the lake (``liger_warehouse.lake.objects``). Here
the same statements run in that order in one transaction on the lake of ``ROOT``, which is
rolled back: the lake's snapshot does not move. The copy of the stored tables is the row
``(stored tables)``. The bytes are those of the files a table's copy added under the lake's data
directory, before the rollback. ``--zstd`` also gives every table's bytes as the lake holds it (in the codec its
catalog names: zstd; DuckLake's default, Snappy, in a lake last published before the warehouse
chose zstd) beside the same rows written with zstd as one file. Prints one JSON line, the derived tables
by seconds, largest first.

``--memory-limit`` sets DuckDB's ``memory_limit`` (the warehouse's setting otherwise). ``--rewrite``
first rewrites those stored tables in the same transaction (``create or replace table t as select *
from t``), as a refresh's publishing transaction has written them before its derived tables: a
statement's memory then includes reading data its own transaction wrote. A statement that fails
(out of memory) ends the run, its error recorded.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from benchmarks.machine import machine, repository
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import ALIAS, DATA_DIR, Lake
from liger_warehouse.lake.objects import copy_into_lake, derived_statement, sql_objects, stage_stored_reads


def _files(data: Path) -> dict[str, int]:
    return {p.relative_to(data).as_posix(): p.stat().st_size for p in data.rglob("*.parquet")}


def measure(root: Path, memory_limit: str | None = None, rewrite: tuple[str, ...] = ()) -> list[dict]:
    """Seconds, rows and bytes written of each derived table, in load order, after ``rewrite``;
    up to the first statement that fails, with its error."""
    data = root / DATA_DIR
    out: list[dict] = []
    con = open_lake(Lake.of(str(root)), config={"memory_limit": memory_limit} if memory_limit else None)
    try:
        con.execute("begin")
        for table in rewrite:
            con.execute(f"create or replace table {table} as select * from {table}")
        files = sql_objects()
        derived = [f for f in files if f.kind == "derived"]
        out.append(_timed("(stored tables)", lambda: stage_stored_reads(con, derived, files)))
        if "error" in out[-1]:
            return out
        for file in derived:
            out.append(_timed(file.name, lambda file=file: con.execute(derived_statement(file))))
            if "error" in out[-1]:
                return out
            (out[-1]["rows"],) = con.execute(f"select count(*) from temp.main.{file.name}").fetchone()
        for file, row in zip(derived, out[1:], strict=True):
            before = _files(data)
            copy = _timed(file.name, lambda file=file: copy_into_lake(con, file.name))
            row["copy_seconds"] = copy["seconds"]
            if "error" in copy:
                row["error"] = copy["error"]
                return out
            row["bytes"] = sum(size for path, size in _files(data).items() if path not in before)
        con.execute("rollback")
    finally:
        con.close()
    return out


def _timed(table: str, statement: Callable[[], object]) -> dict:
    started = time.perf_counter()
    try:
        statement()
    except (duckdb.Error, RuntimeError) as exc:  # RuntimeError: a copy's error, named (lake.objects)
        return {"table": table, "seconds": time.perf_counter() - started, "error": str(exc)}
    return {"table": table, "seconds": time.perf_counter() - started}


def table_bytes(root: Path, scratch: Path) -> dict[str, dict[str, int]]:
    """Every table's Parquet bytes in the lake, and the same rows written with zstd to ``scratch``."""
    out = {}
    con = open_lake(Lake.of(str(root)), read_only=True)
    try:
        held = con.execute(f"select table_name, file_size_bytes from ducklake_table_info('{ALIAS}')").fetchall()
        for table, size in sorted(held):
            con.execute(f"copy (from {table}) to '{scratch}' (format parquet, compression zstd)")
            out[table] = {"bytes": size, "zstd_bytes": scratch.stat().st_size}
            scratch.unlink()
    finally:
        con.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, required=True, help="a built warehouse root")
    parser.add_argument("--zstd", action="store_true", help="every table's bytes, and written with zstd")
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit (default: the warehouse's)")
    parser.add_argument("--rewrite", default="", help="stored tables to rewrite in the transaction first, a,b,...")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    started = machine("")
    tables = measure(args.warehouse, args.memory_limit, tuple(t for t in args.rewrite.split(",") if t))
    result = {
        "command": "python -m benchmarks.derived_cost " + shlex.join(sys.argv[1:]),
        "machine": started,
        "repository": repository(),
        "ok": not any("error" in t for t in tables),
        "seconds": sum(t["seconds"] + t.get("copy_seconds", 0) for t in tables),
        "bytes": sum(t.get("bytes", 0) for t in tables),
        "tables": sorted(tables, key=lambda t: -t["seconds"] - t.get("copy_seconds", 0)),
    }
    if args.zstd:
        result["table_bytes"] = table_bytes(args.warehouse, args.warehouse.with_name("zstd-scratch.parquet"))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
