"""One query on several warehouses, timed warm and profiled by DuckDB itself: where its time goes
(planning against execution) and what it allocates, figures that move less with the machine's
load than wall time does.

    python -m benchmarks.query_profile --warehouse DIR [--warehouse DIR ...] [--query SQL] [--runs 5]
        [--threads 1] [--json FILE]

Each round reads the query once from every warehouse in turn (a read-only connection each, opened
once and warmed by one run), so a change of load falls on all of them alike; the wall time is the
median of ``--runs`` rounds. Then one more run under DuckDB's JSON profiler gives its latency,
operator CPU time, planner (binding and logical planning) and optimizer seconds, the memory it allocated and its peak
buffer memory, with the slowest operators. Each warehouse's ``warehouse_build`` SQL digest says
which ``sql/`` built its macros and views: two warehouses of one mirror built by two commits
compare those commits' SQL.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import duckdb

from benchmarks.machine import machine, repository
from liger_warehouse.lake.location import CATALOG_FILE
from tests.plain_duckdb import open_views

DEFAULT_QUERY = "select * from compare_runs('previous', 'latest')"
# What the profile records of one run (DuckDB profiler metric names): where planning and execution go.
FIGURES = ("latency", "cpu_time", "planner", "all_optimizers", "physical_planner", "total_memory_allocated",
           "system_peak_buffer_memory")  # fmt: skip


def _wall(con: duckdb.DuckDBPyConnection, query: str) -> tuple[float, int]:
    """The seconds ``query`` took, read whole into Arrow, and its rows."""
    clock = time.perf_counter()
    rows = con.execute(query).to_arrow_table().num_rows
    return time.perf_counter() - clock, rows


def _operators(node: dict) -> list[tuple[float, str, int]]:
    own = [(node.get("operator_timing") or 0.0, str(node.get("operator_type")), node.get("operator_cardinality") or 0)]
    return own + [op for child in node.get("children", []) for op in _operators(child)]


def profiled(con: duckdb.DuckDBPyConnection, query: str) -> dict:
    """One run of ``query`` under DuckDB's JSON profiler: ``FIGURES`` and the five slowest operators."""
    settings = {name: "true" for name in (*FIGURES, "OPERATOR_TIMING", "OPERATOR_CARDINALITY", "OPERATOR_TYPE")}
    con.execute(f"set custom_profiling_settings = '{json.dumps(settings)}'")
    con.execute("pragma enable_profiling = 'no_output'")
    try:
        con.execute(query).to_arrow_table()
        profile = json.loads(con.get_profiling_information(format="json"))
    finally:
        con.execute("pragma disable_profiling")
    slowest = sorted(_operators(profile), reverse=True)[:5]
    return {name: profile.get(name) for name in FIGURES} | {
        "slowest_operators": [{"seconds": s, "operator": op, "rows": rows} for s, op, rows in slowest]
    }


def measure(warehouses: list[Path], query: str, runs: int, threads: int) -> list[dict]:
    cons = [open_views(root / CATALOG_FILE) for root in warehouses]
    try:
        rows = []
        for con in cons:
            con.execute(f"set threads = {threads}")
            rows.append(_wall(con, query)[1])  # the warm-up
        walls: list[list[float]] = [[] for _ in cons]
        for _ in range(runs):
            for con, seconds in zip(cons, walls, strict=True):
                seconds.append(_wall(con, query)[0])
        out = []
        for root, con, seconds, count in zip(warehouses, cons, walls, rows, strict=True):
            (sql_version,) = con.execute("select sql_version from warehouse_build").fetchone()
            timed = {
                "warehouse": str(root),
                "sql_version": sql_version,
                "rows": count,
                "warm_s": statistics.median(seconds),
                "warm_range_s": [min(seconds), max(seconds)],
            }
            out.append(timed | profiled(con, query))
        return out
    finally:
        for con in cons:
            con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, action="append", required=True, help="a built warehouse root")
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="DuckDB threads (1: less moved by the load)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    started = machine("")
    warehouses = measure(args.warehouse, args.query, args.runs, args.threads)
    result = {
        "command": "python -m benchmarks.query_profile " + shlex.join(sys.argv[1:]),
        "machine": started | {"load_end": os.getloadavg()[0]},
        "repository": repository(),
        "query": args.query,
        "warehouses": warehouses,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    for w in warehouses:
        print(
            f"{w['warehouse']} (sql {w['sql_version']}): {w['rows']} rows, warm {w['warm_s']:.3f} s; profiled: "
            f"latency {w['latency']:.3f} s, operators' CPU {w['cpu_time']:.3f} s, planner {w['planner']:.3f} s, "
            f"optimizers {w['all_optimizers']:.3f} s, allocated {w['total_memory_allocated'] / 2**20:.0f} MiB"
        )


if __name__ == "__main__":
    main()
