"""Latency of every view from ``sql/`` and of ``compare_versions`` and ``compare_runs``, beside one
scan of fact_result.

    python -m benchmarks.views --database WAREHOUSE/liger.duckdb --repeats 3

Each query is run to completion with its whole result fetched (as Arrow), once per repeat,
the queries interleaved so they share the machine's conditions; a first untimed pass warms
the OS cache. The baseline is one pass over ``fact_result``: ``select count(*), sum(p50)``.
Prints one JSON line: per query, its seconds per repeat and its row count.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb

from liger_warehouse.serve.database import analytic_view_files

BASELINE = "select count(*), sum(p50) from fact_result"


# The comparisons people call, each on the two newest sides of its kind.
NEWEST = {
    "compare_versions": "select build from dim_build order by build_rank desc limit 2",
    "compare_runs": "select run from dim_upstream_revision where source = 'gh-pages' order by seq desc limit 2",
}


def queries(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The baseline, every analytic view, and ``compare_versions`` / ``compare_runs`` on the two
    newest builds and runs."""
    stems = {f.name for f in analytic_view_files()}
    views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    out = {"scan fact_result": BASELINE}
    out |= {v: f"select * from {v}" for v in sorted(stems & views)}
    for macro, newest_sql in NEWEST.items():
        newest = [r[0] for r in con.execute(newest_sql).fetchall()]
        if len(newest) == 2:
            out[macro] = f"select * from {macro}('{newest[1]}', '{newest[0]}')"
    return out


def timed(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[float, int]:
    started = time.perf_counter()
    relation = con.sql(sql)
    # DuckDB 2 renamed fetch_arrow_table to to_arrow_table.
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    rows = fetch().num_rows
    return time.perf_counter() - started, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    con = duckdb.connect(str(args.database), read_only=True, config={"file_search_path": str(args.database.parent)})
    wanted = queries(con)
    timed(con, BASELINE)
    seconds: dict[str, list[float]] = {name: [] for name in wanted}
    rows: dict[str, int] = {}
    for _ in range(args.repeats):
        for name, sql in wanted.items():
            took, rows[name] = timed(con, sql)
            seconds[name].append(took)
    print(json.dumps({"ok": True, "seconds": seconds, "rows": rows, "sql": wanted}))


if __name__ == "__main__":
    main()
