"""Verdicts on real consecutive nightly runs: false alarms on code that did not change, changes
only an outlier base shows, and recall on the changes commits announce.

    python -m benchmarks.real_history --json FILE [--mirror DIR] [--work DIR] [--significance V] [--note TEXT]

Builds a warehouse from the mirror with the real ``refresh`` job, opens it read-only and, for
every consecutive pair of gh-pages runs (commits.txt, upload order) whose compare the mirror
holds, and for every rule variant of ``RULES``:

1. false alarms: the Liger series of kernels whose code the range did not change (no changed
   file has one of the kernel's stems: the lake's `kernel_files`, and the stem rule of
   `kernel_file_stem` worked out in Python) that the rule calls a regression or an improvement;
   per pair, pooled, the worst pair, and the pairs of one commit benchmarked twice (status
   identical) apart;
2. outlier bases: regressions whose head p50 is no worse than the median of the series' five
   runs before the head (from the gh-pages results, not the lake's recent level), and
   improvements whose head is no better;
3. recall on labelled events: each kernel whose files a range changed, when a commit title of
   that range reads as performance work: does the rule flag one of the kernel's Liger series;
4. the latency of each rule on the newest pair (``benchmarks/view_latency.py``'s ``measure``:
   the warm figure is the median of ``--latency-runs`` on one connection after a warm-up).

With ``--significance``, everything is measured on a scratch copy of the lake whose
``verdict_rule()`` has that significance (the series noise recomputed: ``verdict_data.Scratch``),
to set a setting of the dial of docs/VERDICTS.md beside the default on real history.

A range GitHub lists as behind or diverged, or without a compare in the mirror, is skipped (its
list of files misses code that changed). Prints a table; writes everything, with the command,
the machine and the commit measured, to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks.machine import machine, repository
from benchmarks.real_history_data import (
    FLAGS,
    OUTLIER_COUNTS,
    PERFORMANCE,
    PRIOR_RUNS,
    Pair,
    call,
    false_alarms,
    found,
    kernel_stems,
    outliers,
    prior_medians,
    read_pairs,
    run_points,
    runs,
    verdicts,
)
from benchmarks.verdict_data import Scratch, open_database
from benchmarks.verdict_inject import refresh
from benchmarks.verdicts import MIRROR, ROOT
from benchmarks.view_latency import measure
from liger_warehouse.lake.location import CATALOG_FILE

# The rule variants set side by side: a call of a table macro returning `series_digest`, `kernel`,
# `verdict` and `head_p50`, with the two runs as {base} and {head} (SQL literals).
RULES: dict[str, str] = {
    "compare_runs": "compare_runs({base}, {head})",
    "compare_runs, base run alone": "compare_runs({base}, {head}, recent := false)",
    # A flag counted only once the runs after the head confirm it: precision bought with nights.
    "compare_runs, confirmed": (
        "(select * replace (if(verdict in ('regression', 'improvement') and confirmation is distinct from "
        "'confirmed', 'inconclusive', verdict) as verdict) from compare_runs({base}, {head}))"
    ),
}
LATENCY_RUNS = 7
COUNTS = ("series", "flagged", *FLAGS, "environment", "inconclusive")


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def judge_pair(
    con: duckdb.DuckDBPyConnection, pair: Pair, stems: dict[str, frozenset[str]], medians: dict[str, float]
) -> dict:
    """One pair under every rule: its false alarms, outlier bases and labelled events."""
    record: dict = {"pair": pair.label, "base": pair.base, "head": pair.head, "status": pair.status}
    record["skipped"] = pair.skipped
    record["performance_titles"] = list(pair.performance_titles)
    if pair.skipped:
        return record
    touched = pair.touched(stems)
    unchanged = frozenset(stems) - touched
    record |= {
        "files": len(pair.files),
        "changed_stems": sorted(pair.changed_stems),
        "touched_kernels": sorted(touched),
    }
    events = [{"kernel": k, "named_in_title": pair.named(k, stems[k]), "rules": {}} for k in sorted(touched)]
    record["events"] = events if pair.performance_titles else []
    record["rules"] = {}
    for name, template in RULES.items():
        rows = verdicts(con, template, pair.base, pair.head)
        record["rules"][name] = {
            "compared": len(rows),  # none when the runs share no series (another GPU)
            "false_alarms": false_alarms(rows, unchanged),
            "outliers": outliers(rows, medians),
        }
        for event in record["events"]:
            event["rules"][name] = found(rows, event["kernel"])
    return record


def _pooled(records: list[dict], rule: str) -> dict:
    parts = [r["rules"][rule]["false_alarms"] for r in records]
    pooled = {key: sum(p[key] for p in parts) for key in COUNTS}
    pooled["share"] = _share(pooled["flagged"], pooled["series"])
    pooled["inconclusive_share"] = _share(pooled["inconclusive"], pooled["series"])
    return {"pairs": sum(bool(p["series"]) for p in parts), **pooled}


def _worst(records: list[dict], rule: str) -> dict | None:
    judged = [r for r in records if r["rules"][rule]["false_alarms"]["series"]]
    if not judged:
        return None
    worst = max(judged, key=lambda r: r["rules"][rule]["false_alarms"]["share"])
    return {"pair": worst["pair"], **worst["rules"][rule]["false_alarms"]}


def _recall(events: list[dict], rule: str) -> dict:
    """Events of kernels benchmarked in both runs: how many the rule found, and which way."""
    held = [e for e in events if e["rules"][rule]["series"]]
    hits = [e for e in held if e["rules"][rule]["found"]]
    named = [e for e in held if e["named_in_title"]]
    named_hits = [e for e in named if e["rules"][rule]["found"]]
    dominant = {d: sum(e["rules"][rule]["dominant"] == d for e in hits) for d in (*FLAGS, "tie")}
    return {"events": len(held), "found": len(hits), "recall": _share(len(hits), len(held)),
            "named_events": len(named), "named_found": len(named_hits),
            "named_recall": _share(len(named_hits), len(named)), "dominant": dominant,
            "not_benchmarked": len(events) - len(held)}  # fmt: skip


def summarize_rule(records: list[dict], rule: str) -> dict:
    judged = [r for r in records if not r["skipped"]]
    identical = [r for r in judged if r["status"] == "identical"]
    changed = [r for r in judged if r["status"] != "identical"]
    return {
        "template": RULES[rule],
        "pooled": _pooled(judged, rule),
        "pooled_code_changed_pairs": _pooled(changed, rule),
        "worst_pair": _worst(judged, rule),
        "identical_pairs": _pooled(identical, rule),
        "outliers_pooled": {k: sum(r["rules"][rule]["outliers"][k] for r in judged) for k in OUTLIER_COUNTS},
        "outliers_newest_pair": {"pair": judged[-1]["pair"], **judged[-1]["rules"][rule]["outliers"]} if judged else {},
        "labelled": _recall([e for r in judged for e in r["events"]], rule),
    }


def latency(catalog: Path, pair: Pair, runs_each: int) -> dict:
    out = {}
    for rule, template in RULES.items():
        sql = call(template, pair.base, pair.head)
        timing = measure(catalog, sql, f"select * from {sql}", runs_each)
        out[rule] = {"pair": pair.label, "rows": timing.rows, "warm_ms": statistics.median(timing.warm) * 1000,
                     "warm_range_ms": [min(timing.warm) * 1000, max(timing.warm) * 1000],
                     "fresh_ms": statistics.median(timing.fresh) * 1000}  # fmt: skip
    return out


def evaluate(catalog: Path, mirror: Path, latency_runs: int) -> dict:
    """Every measurement on the warehouse of ``catalog``, built from ``mirror``."""
    pairs, order = read_pairs(mirror), runs(mirror)
    with open_database(catalog) as con:
        stems, points = kernel_stems(con), run_points(con)
        records = [judge_pair(con, p, stems, prior_medians(points, order, p.head)) for p in pairs]
        (sql_version,) = con.execute("select sql_version from warehouse_build").fetchone()
    return {
        "warehouse": {"sql_version": sql_version, "runs": len(order), "pairs": len(pairs), "kernels": len(stems)},
        "rules": {rule: summarize_rule(records, rule) for rule in RULES},
        "latency": latency(catalog, pairs[-1], latency_runs),
        "pairs": records,
    }


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def table(results: dict) -> str:
    rules = list(results["rules"])
    width = max(24, *map(len, rules))
    lines = [f"{'pair':37} {'status':10} {'kernels touched':>15}  " + "  ".join(r.rjust(width) for r in rules)]
    for record in results["pairs"]:
        if record["skipped"]:
            lines.append(f"{record['pair']:37} {record['status'] or '-':10} skipped: {record['skipped']}")
            continue
        cells = []
        for rule in rules:
            fa = record["rules"][rule]["false_alarms"]
            cell = f"{fa['flagged']:>5}/{fa['series']:<5} {_percent(fa['share']):>7}"
            cells.append((cell if record["rules"][rule]["compared"] else "no series in both runs").rjust(width))
        lines.append(
            f"{record['pair']:37} {record['status']:10} {len(record['touched_kernels']):>15}  " + "  ".join(cells)
        )
    lines.append("")
    for rule, s in results["rules"].items():
        p, w, i, o, lab = s["pooled"], s["worst_pair"], s["identical_pairs"], s["outliers_pooled"], s["labelled"]
        newest, timing = s["outliers_newest_pair"], results["latency"][rule]
        lines += [
            f"{rule}  ({s['template']})",
            f"  unchanged-code Liger series flagged: pooled {p['flagged']}/{p['series']} {_percent(p['share'])} over "
            f"{p['pairs']} pairs with such series; worst pair {w['pair'] if w else '-'} "
            f"{_percent(w['share'] if w else None)}",
            f"  identical pairs ({i['pairs']}): flagged {_percent(i['share'])}, inconclusive "
            f"{_percent(i['inconclusive_share'])} of {i['series']}",
            f"  outlier bases (head within the median of {PRIOR_RUNS} runs before): regressions "
            f"{o.get('regressions_within_median', 0)}/{o.get('regressions', 0)}, improvements "
            f"{o.get('improvements_within_median', 0)}/{o.get('improvements', 0)}; newest pair "
            f"{newest.get('regressions_within_median', 0)}/{newest.get('regressions', 0)} and "
            f"{newest.get('improvements_within_median', 0)}/{newest.get('improvements', 0)}",
            f"  labelled events found: {lab['found']}/{lab['events']} {_percent(lab['recall'])}; named in a title "
            f"{lab['named_found']}/{lab['named_events']} {_percent(lab['named_recall'])}",
            f"  latency on {timing['pair']}: warm {timing['warm_ms']:.0f} ms, fresh {timing['fresh_ms']:.0f} ms",
        ]
    return "\n".join(lines)


def _measure(catalog: Path, scratch_dir: Path, args: argparse.Namespace) -> dict:
    """``evaluate`` on the warehouse, or on a scratch copy at ``--significance``."""
    if args.significance is None:
        return evaluate(catalog, args.mirror, args.latency_runs)
    scratch = Scratch(catalog, scratch_dir)
    try:
        scratch.recompute({"significance": args.significance})
        return {"significance": args.significance} | evaluate(
            scratch.path / CATALOG_FILE, args.mirror, args.latency_runs
        )
    finally:
        scratch.close()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_history", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True, help="where the results go")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="the upstream mirror directory")
    parser.add_argument("--work", type=Path, help="where the warehouse is built and kept (default: a temporary one)")
    parser.add_argument("--latency-runs", type=int, default=LATENCY_RUNS)
    parser.add_argument(
        "--significance", type=float, help="verdict_rule().significance to measure at (default: the rule's)"
    )
    parser.add_argument("--note", default="", help="said beside the load average, e.g. 'machine quiet'")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    facts = machine(args.note)
    work = args.work or Path(tempfile.mkdtemp(prefix="liger-real-history-"))
    try:
        warehouse = work / "warehouse"
        refresh(warehouse, args.mirror)
        build = time.perf_counter() - started
        print(f"built the warehouse from {args.mirror} in {build:.0f} s", file=sys.stderr, flush=True)
        measured = _measure(warehouse / CATALOG_FILE, work / "scratch", args)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    facts["load_end"] = os.getloadavg()[0]
    results = {
        "command": "python -m benchmarks.real_history " + shlex.join(sys.argv[1:] if argv is None else argv),
        "machine": facts,
        "repository": repository(),
        "mirror": os.path.relpath(args.mirror.absolute(), ROOT),
        "performance_wording": PERFORMANCE.pattern,
        "build_seconds": build,
        **measured,
        "seconds": time.perf_counter() - started,
    }
    args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(table(results))
    return results


if __name__ == "__main__":
    main()
