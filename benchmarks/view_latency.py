"""Latency of every analytic view of the lake on a warehouse built from the real history.

    python -m benchmarks.view_latency --warehouse DIR [--runs 7] [--write]

Each view is read whole into Arrow (so every column is computed and Python object conversion
is not what is measured), ``--runs`` times in two ways: on a fresh read-only connection each
time, which is what one ``liger-warehouse sql`` call or one DuckDB CLI session pays, and on one
open connection after a warm-up run, which is what a notebook session pays. The median and
the spread (fastest-slowest) go to stdout and, with ``--write``, replace the section "View
latencies on the real history" of docs/BENCHMARK-OUTPUT.md, between its own markers, leaving every
other section of that file alone. (``benchmarks/views.py`` is the issue-5 suite's step that
times the same views on synthetic warehouses of growing size.)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from benchmarks.sections import write_section
from liger_warehouse.lake.location import CATALOG_FILE
from tests.plain_duckdb import open_views

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARK-OUTPUT.md"
SECTION = "view-latency"
HEADING = "## View latencies on the real history"
QUERIES = {
    "results": "select * from results",
    "current_results": "select * from current_results",
    "version_points": "select * from version_points",
    "version_history": "select * from version_history",
    "regressions": "select * from regressions",
    "compare_versions('0.6.3', '0.7.0')": "select * from compare_versions('0.6.3', '0.7.0')",
    "speedups": "select * from speedups",
    "speedup_history": "select * from speedup_history",
    "restatements": "select * from restatements",
    "run_history": "select * from run_history",
    "change_points": "select * from change_points",
    "versions": "select * from versions",
}


@dataclass
class Timing:
    view: str
    rows: int
    fresh: list[float]
    warm: list[float]


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.0f}"


def _spread(seconds: list[float]) -> str:
    return f"{min(seconds) * 1000:.0f}-{max(seconds) * 1000:.0f}"


def _open(catalog: Path) -> duckdb.DuckDBPyConnection:
    """Read-only, as any DuckDB client opens it: ATTACH of the catalog, the data beside it."""
    return open_views(catalog)


def _run(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[float, int]:
    started = time.perf_counter()
    rows = con.sql(sql).to_arrow_table().num_rows
    return time.perf_counter() - started, rows


def measure(database: Path, name: str, sql: str, runs: int) -> Timing:
    fresh = []
    for _ in range(runs):
        with _open(database) as con:
            fresh.append(_run(con, sql)[0])
    with _open(database) as con:
        _, rows = _run(con, sql)  # warm-up: Parquet footers and the OS page cache
        warm = [_run(con, sql)[0] for _ in range(runs)]
    return Timing(name, rows, fresh, warm)


def section(timings: list[Timing], database: Path, runs: int, load: float) -> str:
    with _open(database) as con:
        results = con.execute("select count(*) from results").fetchall()[0][0]
    lines = [
        HEADING,
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `python -m benchmarks.view_latency --warehouse DIR --write`",
        f"on a warehouse built from the upstream mirror ({results:,} results): {os.cpu_count()} cores,",
        f"Python {platform.python_version()}, DuckDB {duckdb.__version__}, load average {load:.1f} at the start.",
        f"Each view is read whole into Arrow, {runs} runs each: on a fresh read-only connection per run",
        "(what one `liger-warehouse sql` call pays) and on one open connection after a warm-up run",
        "(what a notebook session pays). Milliseconds; the spread is the fastest and slowest run.",
        "",
        "| view | rows | fresh median | fresh spread | warm median | warm spread |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for t in timings:
        lines.append(
            f"| `{t.view}` | {t.rows:,} | {_ms(t.fresh)} | {_spread(t.fresh)} | {_ms(t.warm)} | {_spread(t.warm)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default=os.getenv("LIGER_WAREHOUSE_DIR", "warehouse"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--write", action="store_true", help=f"update docs/{OUTPUT.name}")
    args = parser.parse_args()
    database = Path(args.warehouse) / CATALOG_FILE
    load = os.getloadavg()[0]
    timings = []
    for name, sql in QUERIES.items():
        timings.append(measure(database, name, sql, args.runs))
        t = timings[-1]
        print(f"{name:36} {t.rows:>8,} rows  fresh {_ms(t.fresh):>5} ms  warm {_ms(t.warm):>5} ms")
    if args.write:
        write_section(OUTPUT, SECTION, section(timings, database, args.runs, load))


if __name__ == "__main__":
    main()
