"""Run the benchmark suite of issue 5 and write its results into ``docs/BENCHMARK-OUTPUT.md``.

    python -m benchmarks.run --sizes 1e5,1e6,1e7 --incremental 10,100,1000 --repeats 3 \\
        --out docs/BENCHMARK-OUTPUT.md

Scenarios, each against synthetic mirrors (``benchmarks.synthetic``) of nightly runs of
``--rows-per-revision`` rows:

1. full build throughput at each size (results), beside DuckDB's raw CSV-to-Parquet copy of
   the same files, and the peak memory of the whole process tree;
2. incremental refresh with one new nightly run on histories of ``--incremental`` revisions;
3. no-change refresh of the same warehouses: requests, content bytes, Parquet bytes written;
4. the query targets at the largest size (``benchmarks.views``): the README's example questions,
   and every view read whole beside ``fact_result`` read whole.

The results of 1-3 replace the block between ``<!-- benchmarks:begin -->`` and
``<!-- benchmarks:end -->`` in ``--out``, those of 4 the block of ``benchmarks.views``
(``<!-- queries:begin -->``); other sections are left alone. The raw measurements go to
``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks import report, scenarios, views
from benchmarks.machine import machine
from benchmarks.sections import markers, write_section

SECTION = "benchmarks"
BEGIN, END = markers(SECTION)


def _ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=_ints, default=_ints("1e5,1e6,1e7"), help="full-build sizes in results")
    p.add_argument("--incremental", type=_ints, default=_ints("10,100,1000"), help="history sizes in revisions")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--large-repeats", type=int, help="repeats at 1e7 results and 1000 revisions (default --repeats)")
    p.add_argument("--rows-per-revision", type=int, default=3000)
    p.add_argument("--gh-pages-fraction", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", type=Path, default=Path("/tmp/liger-benchmarks"), help="mirrors, warehouses, logs")
    p.add_argument("--out", type=Path, help="Markdown file to write the results into")
    p.add_argument("--json", type=Path, help="raw results (default: <work>/results.json)")
    p.add_argument("--rss-cap-gib", type=float, default=16.0, help="kill a measured process tree above this")
    p.add_argument("--note", default="", help="said beside the load average, e.g. 'machine quiet'")
    p.add_argument("--keep", action="store_true", help="keep the full-build warehouses")
    p.add_argument("--merge", type=Path, help="results JSON of an earlier run: its other scenarios are kept")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    cap = int(args.rss_cap_gib * 2**30) if args.rss_cap_gib else None
    b = scenarios.Bench(args.work, args.repeats, args.rows_per_revision, args.gh_pages_fraction, args.seed, cap)
    large = replace(b, repeats=args.large_repeats or args.repeats)
    results: dict = {"machine": machine(args.note), "command": _command(argv), "full": [], "incremental": []}
    saved = args.json or args.work / "results.json"

    def save() -> None:  # after every scenario, so a long run that dies keeps what it measured
        results["machine"]["load_end"] = os.getloadavg()[0]
        saved.write_text(json.dumps(results, indent=1, default=str))

    for size in args.sizes:
        print(f"full build at {size:,} results", file=sys.stderr)
        results["full"].append(scenarios.full_build(large if size >= 10**7 else b, size))
        save()
    if results["full"]:
        largest = results["full"][-1]
        print(f"views at {largest['target_results']:,} results", file=sys.stderr)
        results["views"] = scenarios.views(b, Path(largest["warehouse"]))
        save()
        if args.out and results["views"].get("ok"):
            write_section(args.out, views.SECTION, report.query_section(results["views"]))
    if not args.keep:
        shutil.rmtree(args.work / "warehouses", ignore_errors=True)
    for history in args.incremental:
        print(f"incremental refresh on {history} revisions", file=sys.stderr)
        results["incremental"].append(scenarios.incremental(large if history >= 1000 else b, history))
        save()
    if args.merge:
        results = merge(json.loads(args.merge.read_text()), results)
        save()
    markdown = report.render(results)
    if args.out:
        write_section(args.out, SECTION, markdown)
    print(markdown)
    return results


def merge(earlier: dict, later: dict) -> dict:
    """``later``'s scenarios over ``earlier``'s: a size or history measured again replaces the
    earlier measurement, the others are kept and said to come from the earlier run."""
    full = {s["target_results"]: s for s in earlier["full"]} | {s["target_results"]: s for s in later["full"]}
    steps = {h["history"]: h for h in earlier["incremental"]} | {h["history"]: h for h in later["incremental"]}
    out = {**earlier, **later, "full": [full[k] for k in sorted(full)]}
    out["incremental"] = [steps[k] for k in sorted(steps)]
    if "views" in earlier and ("views" not in later or max(full) not in {s["target_results"] for s in later["full"]}):
        out["views"] = earlier["views"]
    out["merged"] = [*earlier.get("merged", []), {"machine": earlier["machine"], "command": earlier["command"]}]
    return out


def _command(argv: list[str] | None) -> str:
    return "python -m benchmarks.run " + shlex.join(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
