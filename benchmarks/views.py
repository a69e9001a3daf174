"""The query targets of issue 13 on one warehouse, on a warm connection.

    python -m benchmarks.views --warehouse WAREHOUSE --repeats 3 [--out docs/BENCHMARK-OUTPUT.md]
    python -m benchmarks.views --warehouse WAREHOUSE --examples-only --memory-limit 1GB

Two sets of queries, each fetched whole as Arrow (so every column is computed and Python object
conversion is not what is measured):

- the README's example questions, filtered as the README filters them, with the values (builds,
  runs, GPU, kernel, baseline) picked from the warehouse: the busiest of each, so the filters keep as
  much as they can (``picks``); the ``regressions`` command's own query is one of them;
- every analytic view read whole, beside ``select * from fact_result`` read whole: the same kind
  of work.

One connection for everything, the warehouse's own reader (``read_lake``: the lake attached
read-only at its newest snapshot); a first untimed pass over every query warms it (and the OS
cache); then each repeat runs every query once, interleaved, so they
share the machine's conditions. Prints one JSON line; with ``--out`` the results (and the
targets) replace the section "Queries at ... results" of that page, leaving the others alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import time
from pathlib import Path

import duckdb

from benchmarks import report
from benchmarks.machine import machine
from benchmarks.sections import write_section
from liger_warehouse.cli.query import COMPARE_SQL
from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.lake.objects import sql_objects

BASELINE = "select * from fact_result"
SECTION = "queries"

# The values the examples are filtered by: the busiest of each, so a filter keeps the most.
PICKS = {
    "head": "select build from dim_build where build_kind = 'release' order by build_rank desc limit 1",
    # The release before the head's, else (a history of one release) the newest other build: an
    # unknown build is an error, not an empty answer.
    "base": """
        select build from dim_build where build <> $head
        order by build_kind = 'release' desc, build_rank desc limit 1""",
    "head_run": "select run from dim_upstream_revision where source = 'gh-pages' order by seq desc limit 1",
    # The newest earlier run holding a series of the head: on the synthetic history consecutive
    # nightlies ran on other GPUs, so 'previous' would share nothing with 'latest'.
    "base_run": """
        select p.run from fact_run_point as p
        where p.run_seq < (select max(run_seq) from fact_run_point where run = $head_run)
          and p.series_digest in (select series_digest from fact_run_point where run = $head_run)
        group by p.run order by max(p.run_seq) desc limit 1""",
    "gpu": "select gpu from dim_series where is_liger group by gpu order by count(*) desc, gpu limit 1",
    "kernel": """
        select kernel from dim_series where gpu = $gpu group by kernel order by count(*) desc, kernel limit 1""",
    "restated_kernel": """
        select s.kernel from fact_result as f join dim_series as s using (series_digest)
        where not f.is_current group by s.kernel order by count(*) desc, s.kernel limit 1""",
    "changed_kernel": """
        select s.kernel from fact_change_point join dim_series as s using (series_digest)
        group by s.kernel order by count(*) desc, s.kernel limit 1""",
    "baseline": """
        select s.provider from fact_speedup_noise as n
        join dim_series as s on s.series_digest = n.baseline_series_digest
        group by s.provider order by count(*) desc, s.provider limit 1""",
}

# The README's example questions, its filters kept and its values swapped for the picks ($name).
EXAMPLES = {
    "compare_runs(base_run, head_run)": """
        select verdict, count(*) as series
        from compare_runs($base_run, $head_run)
        group by all
        order by series desc""",
    "compare_versions(base, head), one GPU": """
        select kernel, mode, workload, round(base_p50, 4) as base_ms, round(head_p50, 4) as head_ms,
               round(adjusted_change, 2) as adjusted_change, round(noise, 3) as noise
        from compare_versions($base, $head)
        where verdict = 'regression' and provider = 'liger' and gpu = $gpu and metric = 'speed'
        order by adjusted_change desc, kernel, workload
        limit 5""",
    "regressions command, one kernel and GPU": COMPARE_SQL.format(macro="compare_versions"),
    "regressions view, one kernel and GPU": "select * from regressions where kernel = $kernel and gpu = $gpu",
    "series_noise, one GPU": """
        select kernel, mode, count(*) as series,
               count(*) filter (where detectable_change > 0.25) as too_noisy,
               round(median(detectable_change), 2) as median_detectable
        from series_noise
        where is_liger and metric = 'speed' and gpu = $gpu and history >= 5
        group by all
        order by too_noisy desc, series desc, kernel, mode
        limit 6""",
    "speedups, one GPU": """
        select gpu, baseline_provider, count(*) as pairs,
               count(*) filter (where winner = 'liger') as liger_wins,
               count(*) filter (where winner = 'tie') as ties,
               round(median(speedup), 2) as median_speedup
        from speedups
        where metric = 'speed' and gpu = $gpu
        group by all
        order by gpu, baseline_provider""",
    "speedup_history, one baseline": """
        select prev_winner, winner, count(*) as pairings
        from speedup_history
        where baseline_provider = $baseline and metric = 'speed' and prev_build is not null
        group by all
        order by pairings desc""",
    "restatements, one kernel": """
        select left(restated_in, 7) as commit, restated_at::date as day, reason,
               count(*) as results, list(distinct kernel) as kernels
        from restatements
        where kernel = $restated_kernel
        group by all
        order by day, commit, reason""",
    "change_points, one kernel": """
        select kernel, mode, workload, prev_run, run,
               round(before_median, 4) as before_ms, round(after_median, 4) as after_ms, round(change, 2) as change
        from change_points
        where verdict = 'regression' and provider = 'liger' and metric = 'speed' and after_points >= 3
          and kernel = $changed_kernel
        order by change desc, kernel, workload
        limit 4""",
}


def _used(sql: str, params: dict) -> dict:
    """The parameters ``sql`` names: DuckDB refuses any it does not."""
    named = set(re.findall(r"\$(\w+)", sql))
    return {name: value for name, value in params.items() if name in named}


def picks(con: duckdb.DuckDBPyConnection) -> dict:
    """The values the examples are filtered by, and the command's own parameters."""
    out: dict = {}
    for name, sql in PICKS.items():
        # fetchall, not fetchone: a result left open would refuse the next query on ``con``
        rows = con.execute(sql, _used(sql, out)).fetchall()
        out[name] = rows[0][0] if rows else None
    return out | {"threshold": 0.05, "gpus": [out["gpu"]]}


def examples(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, dict]]:
    """The README's example questions on this warehouse, with their parameters."""
    values = picks(con)
    return {name: (sql, _used(sql, values)) for name, sql in EXAMPLES.items()}


def whole_views(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, dict]]:
    """``fact_result`` and every analytic view, each read whole."""
    stems = {f.name for f in sql_objects() if f.kind == "views"}
    views = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
    out = {"fact_result": (BASELINE, {})}
    return out | {v: (f"select * from {v}", {}) for v in sorted(stems & views)}


def timed(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> tuple[float, int]:
    started = time.perf_counter()
    rows = con.sql(sql, params=params or None).to_arrow_table().num_rows
    return time.perf_counter() - started, rows


def measure(warehouse: Path, repeats: int, whole: bool = True, memory_limit: str | None = None) -> dict:
    """Seconds per repeat and rows of every example and (``whole``) every whole view, on one
    connection to the lake of warehouse root ``warehouse`` (with DuckDB's ``memory_limit``, when given)."""
    con = read_lake(Lake.of(str(warehouse)))
    if memory_limit:
        con.execute("set memory_limit = ?", [memory_limit])
    sets = {"examples": examples(con)} | ({"whole": whole_views(con)} if whole else {})
    wanted = {(kind, name): query for kind, queries in sets.items() for name, query in queries.items()}
    rows, errors = {}, {}
    for key, query in wanted.items():  # the warm-up pass
        try:
            rows[key] = timed(con, *query)[1]
        except duckdb.OutOfMemoryException as exc:  # a result too: it does not fit the limit
            rows[key], errors[key] = None, str(exc).splitlines()[0]
    seconds: dict = {key: [] for key in wanted}
    for _ in range(repeats):
        for key, query in wanted.items():
            if key not in errors:
                seconds[key].append(timed(con, *query)[0])
    return {
        "ok": True,
        "results": con.execute("select count(*) from fact_result").fetchall()[0][0],
        "picks": picks(con),
        **{
            kind: {
                name: {"seconds": seconds[kind, name], "rows": rows[kind, name], "sql": sql, "params": params}
                | ({"error": errors[kind, name]} if (kind, name) in errors else {})
                for name, (sql, params) in queries.items()
            }
            for kind, queries in sets.items()
        },
    }


def _command(args: argparse.Namespace) -> str:
    """The invocation as it is recorded: the options that shape the numbers, the warehouse as
    ``WAREHOUSE`` (a local path would name this machine's scratch directory)."""
    words = ["--warehouse", "WAREHOUSE", "--repeats", str(args.repeats)]
    words += ["--examples-only"] * args.examples_only + (
        ["--memory-limit", args.memory_limit] if args.memory_limit else []
    )
    words += (["--out", "docs/BENCHMARK-OUTPUT.md"] if args.out else []) + (["--note", args.note] if args.note else [])
    return "python -m benchmarks.views " + shlex.join(words)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.views", description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, required=True, help="the warehouse root (its catalog and lake)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="Markdown file to write the results into")
    parser.add_argument("--note", default="", help="said beside the load average, e.g. 'machine quiet'")
    parser.add_argument("--examples-only", action="store_true", help="the README examples, no view read whole")
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit (default: DuckDB's own), e.g. 1GB as the CLI")
    args = parser.parse_args(argv)
    if args.out and args.examples_only:
        parser.error("--out writes the whole-view ratios too: leave out --examples-only")
    started = machine(args.note)
    results = measure(args.warehouse, args.repeats, not args.examples_only, args.memory_limit)
    results["machine"] = started | {"load_end": os.getloadavg()[0]}
    results["command"] = _command(args)
    if args.out:
        write_section(args.out, SECTION, report.query_section(results))
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    main()
