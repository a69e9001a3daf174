"""Verdict quality on the real history: the new verdict rule beside four anchor rules.

    python -m benchmarks.verdicts [--write] [--seeds 3] [--grid full|coarse|smoke] [--mirror DIR] [--work DIR] [--keep]

One run builds a warehouse from the upstream mirror with the real ``refresh`` job and measures,
side by side, the old rule, Liger's dashboard rule (10% over the golden run, and 10% over the
base run), a Conbench lookback z-score, an Otava t-test (``benchmarks/verdict_rules.py``) and
the new rule, ``compare_runs`` of the warehouse:

* false positives: the series flagged between two runs of the same commit (``--pairs``);
* recall: for each pair, a copy of the head run with x1.25 slowdowns in 10% and x0.8 speedups
  in 5% of the Liger series (``workload``) or of the Liger sweeps (``sweep``), with and without
  a x1.08 slowdown of every speed row (host drift), ``--seeds`` draws each. Each copy enters a
  copy of the mirror as the gh-pages run right after its head (the runs after the head left
  out), and a copy of the warehouse of that history is refreshed over it by the real job, so the
  new rule judges it with the noise the refresh computed;
* coverage: the series not ``inconclusive`` (nor left unjudged by an anchor rule);
* the new rule again with each series' noise recomputed from the runs before the judged one, from
  the runs up to it, and under other constants (``verdict_rule()``, among them the significance
  dial from 0 to 8: the new rule's recall against false alarms), and at other thresholds and on
  the base run alone (``compare_runs(..., threshold :=, recent := false)``), in a scratch copy of
  the lake;
* ``compare_runs`` latency on the warehouse (fresh connection and warm, as
  ``benchmarks/view_latency.py`` measures views).

Results go to stdout (and, with ``--work`` or ``--keep``, to ``WORK/results.json``); with
``--write`` they replace the section "How well it works" of docs/VERDICTS.md and the plot
docs/verdicts-benchmark.png.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from benchmarks import verdict_report
from benchmarks.verdict_data import (
    GRIDS,
    Grid,
    Scratch,
    Setting,
    comparison,
    new_rule,
    open_database,
    series,
)
from benchmarks.verdict_inject import (
    DRIFT,
    SCOPES,
    choose,
    copy_mirror,
    injected_csv,
    injected_warehouse,
    line_series,
    mirror_until,
    refresh,
)
from benchmarks.verdict_report import AS_OF_HEAD, HELD_OUT, NEW
from benchmarks.verdict_rules import ANCHOR_RULES, GOLDEN
from benchmarks.verdict_tally import Record, Results
from benchmarks.view_latency import measure
from liger_warehouse.lake.location import CATALOG_FILE
from liger_warehouse.upstream.sources import RUNS_PATH, run_path

ROOT = Path(__file__).resolve().parent.parent
MIRROR = ROOT.parent / "shared" / "upstream" / "liger-kernel"
DOC = ROOT / "docs" / "VERDICTS.md"
PAIRS = "7644a0f-v0.7.0:7644a0f,0a62700-v0.6.4:0a62700"
SEEDS = 3
LATENCY_RUNS = 7


def _tally(
    verdicts: dict[str, str | None], compared: list[str], metrics: dict[str, str], truth: Callable[[str], str]
) -> Counter:
    return Counter((metrics[d], truth(d), verdicts.get(d) or "not judged") for d in compared)


def evaluate(
    database: Path, scratch: Path, base: str, head: str, truth: Callable[[str], str], grid: Grid
) -> tuple[dict[str, Counter], tuple[int, int], int]:
    """Every rule's verdicts on ``base`` -> ``head`` in the warehouse of catalog ``database`` (the new
    rule also at each setting of ``grid``), tallied;
    how many series the dashboard judges against a golden run on another GPU; and how many
    verdicts the scratch copy's recomputed default noise changes (0 unless recomputing drifts)."""
    with open_database(database) as con:
        pair = comparison(con, base, head)
        metrics = {d: s.metric for d, s in series(con, head).items()}
        verdicts = {name: {c.series_digest: rule(c) for c in pair.cases} for name, rule in ANCHOR_RULES.items()}
        verdicts[NEW] = new_rule(con, base, head)
    copy = Scratch(database, scratch / "scratch-lake")
    try:
        copy.recompute({}, until_run=head)
        verdicts[HELD_OUT] = new_rule(copy.con, base, head)
        copy.recompute({}, until_run=head, including=True)
        verdicts[AS_OF_HEAD] = new_rule(copy.con, base, head)
        for overrides, settings in _by_constants(
            (Setting("defaults"), *grid.sensitivity, *grid.operating, *grid.settings)
        ).items():
            copy.recompute(dict(overrides))
            for setting in settings:
                verdicts[f"{NEW}: {setting.label}"] = new_rule(copy.con, base, head, setting.threshold, setting.recent)
    finally:
        copy.close()
    mismatches = sum(verdicts[NEW][d] != verdicts[f"{NEW}: defaults"].get(d) for d in verdicts[NEW])
    compared = [c.series_digest for c in pair.cases]
    golden = sum(v is not None for v in verdicts[GOLDEN].values())
    tallies = {name: _tally(v, compared, metrics, truth) for name, v in verdicts.items()}
    return tallies, (pair.golden_other_gpu, golden), mismatches


def _by_constants(settings: tuple[Setting, ...]) -> dict[tuple, list[Setting]]:
    """The settings (one per label) grouped by their ``verdict_rule()`` constants: the noise is
    recomputed once per group."""
    groups: dict[tuple, dict[str, Setting]] = {}
    for setting in settings:
        groups.setdefault(setting.overrides, {})[setting.label] = setting
    return {overrides: list(group.values()) for overrides, group in groups.items()}


def history_until(mirror: Path, warehouse: Path, work: Path, head: str, names: list[str]) -> tuple[Path, Path]:
    """The mirror and its warehouse as they stood when ``head`` was the newest run, for its
    injected copy to come right after it: a copy appended after later runs would be judged across
    the environment shifts among them, which it does not carry."""
    history, history_warehouse = work / "histories" / head, work / "history-warehouses" / head
    if head == names[-1]:
        return mirror, warehouse
    if not history_warehouse.exists():  # two pairs may share a head
        refresh(history_warehouse, mirror_until(mirror, history, head))
    return history, history_warehouse


def _untouched(_: str) -> str:
    return "untouched"


def _pairs(text: str) -> list[tuple[str, str]]:
    pairs = [tuple(p.split(":")) for p in text.split(",") if p]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise SystemExit(f"--pairs: expected BASE:HEAD[,BASE:HEAD...], not {text!r}")
    return pairs  # type: ignore[return-value]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(
    mirror_source: Path, work: Path, pairs: list[tuple[str, str]], seeds: int, latency_runs: int, grid: Grid
) -> Results:
    started = time.perf_counter()
    mirror = copy_mirror(mirror_source, work / "mirror")
    base_warehouse = work / "warehouse"
    clock = time.perf_counter()
    refresh(base_warehouse, mirror)
    build = time.perf_counter() - clock
    database = base_warehouse / CATALOG_FILE
    _log(f"built the warehouse from {mirror_source} in {build:.0f} s")
    records: list[Record] = []
    golden_other_gpu: dict[str, tuple[int, int]] = {}
    mismatches = 0
    for base, head in pairs:
        tallies, golden_other_gpu[f"{base} → {head}"], wrong = evaluate(database, work, base, head, _untouched, grid)
        mismatches += wrong
        records += [Record("identical", f"{base} → {head}", 1.0, None, rule, t) for rule, t in tallies.items()]
    latency = [
        measure(
            database,
            f"compare_runs('{base}', '{head}')",
            f"select * from compare_runs('{base}', '{head}')",
            latency_runs,
        )
        for base, head in pairs
    ]
    with open_database(database) as con:
        heads = {head: (series(con, head), line_series(con, head)) for _, head in pairs}
        counts = con.execute(
            "select count(*) filter (where source = 'gh-pages' and is_upstream), "
            "(select count(*) from fact_result) from dim_upstream_revision"
        ).fetchone()
    names = (mirror / "gh-pages" / RUNS_PATH).read_text().split()
    refreshes: list[float] = []
    index = 0
    for base, head in pairs:
        original = gzip.decompress((mirror / "gh-pages" / f"{run_path(head)}.gz").read_bytes())
        run_series, lines = heads[head]
        history, head_warehouse = history_until(mirror, base_warehouse, work, head, names)
        for seed in range(seeds):
            for scope in SCOPES:
                injection = choose(run_series, scope, seed)
                for drift in (1.0, DRIFT):
                    index += 1
                    name = f"b{index:06x}"  # a new commit-like run name, newest in commits.txt
                    changed = injected_csv(original, lines, injection, drift)
                    warehouse, seconds = injected_warehouse(
                        history, head_warehouse, work / "injected" / name, name, changed
                    )
                    refreshes.append(seconds)
                    tallies, _, wrong = evaluate(warehouse / CATALOG_FILE, work, base, name, injection.truth, grid)
                    mismatches += wrong
                    records += [Record(scope, f"{base} → {head}", drift, seed, rule, t) for rule, t in tallies.items()]
                    _log(
                        f"{base} → copy of {head} ({name}): {scope}, seed {seed}, drift x{drift:g}: "
                        f"refresh {refreshes[-1]:.0f} s"
                    )
                    shutil.rmtree(warehouse.parent)
    return Results(
        records,
        pairs,
        seeds,
        latency,
        golden_other_gpu,
        counts[0],
        names[-1],
        counts[1],
        build,
        refreshes,
        mismatches,
        grid,
        time.perf_counter() - started,
    )


def _save(results: Results, path: Path) -> None:
    data = asdict(replace(results, records=[]))  # asdict would count a Counter's items as keys
    data["records"] = [
        {**asdict(replace(r, tally=Counter())), "tally": [[*key, n] for key, n in r.tally.items()]}
        for r in results.records
    ]
    path.write_text(json.dumps(data, indent=1, default=str))


def _command(args: argparse.Namespace) -> str:
    """The invocation as it is recorded: the options that shape the numbers, no local paths."""
    words = ["python -m benchmarks.verdicts --write"]
    if args.pairs != PAIRS:
        words.append(f"--pairs {args.pairs}")
    if args.seeds != SEEDS:
        words.append(f"--seeds {args.seeds}")
    if args.latency_runs != LATENCY_RUNS:
        words.append(f"--latency-runs {args.latency_runs}")
    if args.grid != "full":
        words.append(f"--grid {args.grid}")
    return " ".join(words)


def main(argv: list[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="the upstream mirror directory")
    parser.add_argument("--pairs", default=PAIRS, help="identical-commit run pairs, BASE:HEAD,...")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="draws of the injected series per pair and scope")
    parser.add_argument("--latency-runs", type=int, default=LATENCY_RUNS)
    parser.add_argument(
        "--grid",
        choices=GRIDS,
        default="full",
        help="settings measured besides the defaults (coarse: fewer thresholds; smoke: a few of each kind)",
    )
    parser.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--write", action="store_true", help=f"update docs/{DOC.name} and its plot")
    parser.add_argument("--doc", type=Path, default=DOC, help=argparse.SUPPRESS)  # tests write elsewhere
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="liger-verdicts-"))
    work.mkdir(parents=True, exist_ok=True)
    _log(f"scratch directory {work}")
    load = os.getloadavg()[0]
    try:
        results = run(args.mirror, work, _pairs(args.pairs), args.seeds, args.latency_runs, GRIDS[args.grid])
        if args.keep or args.work:
            _save(results, work / "results.json")
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(verdict_report.summary(results))
    if args.write:
        verdict_report.write(results, args.doc, load, _command(args))
    return results


if __name__ == "__main__":
    main()
