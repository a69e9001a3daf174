"""Where the verdict rule loses recall on injected single-workload changes, and what one way of
winning it back would cost.

    python -m benchmarks.verdict_losses --json FILE [--pairs BASE:HEAD,...] [--seeds 3] [--mirror DIR]

For each identical-commit pair and seed, a copy of the head run with the workload injections of
``benchmarks.verdicts`` (x1.25 in 10%, x0.8 in 5% of the Liger series, no drift), placed as there
right after the head, is refreshed by the real job, and every injected speed series is counted by
three verdicts of the base run -> the copy: ``compare_runs``' own, the base run's alone
(``recent := false``) and the recent level's (``recent_verdict``). The counterfactual *promote*
turns an ``inconclusive`` into the flag of its direction whenever the recent level flags that way
too; it is counted on the copy (injected and untouched series) and on the identical pair itself
(every series a false alarm).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.machine import machine, repository
from benchmarks.verdict_data import open_database, series
from benchmarks.verdict_inject import choose, copy_mirror, injected_csv, injected_warehouse, line_series, refresh
from benchmarks.verdicts import MIRROR, PAIRS, SEEDS, _pairs, history_until
from liger_warehouse.lake.location import CATALOG_FILE
from liger_warehouse.upstream.sources import RUNS_PATH, run_path

# Per speed series: the verdict, the base run's alone, the recent level's, and whether promoting
# on the recent level's agreement would flag it.
VERDICTS = """
select c.series_digest, c.verdict, b.verdict as base_only, c.recent_verdict,
       c.verdict = 'inconclusive' and c.recent_verdict in ('regression', 'improvement')
           and sign(c.adjusted_change) = sign(c.recent_change) as promoted
from compare_runs(?, ?) as c
join compare_runs(?, ?, recent := false) as b using (series_digest)
where c.metric = 'speed'
"""


def _judged(catalog: Path, base: str, head: str) -> list[tuple]:
    with open_database(catalog) as con:
        return con.execute(VERDICTS, [base, head, base, head]).fetchall()


def _right(truth: str, verdict: str) -> bool:
    return (truth, verdict) in {("slower", "regression"), ("faster", "improvement")}


def _count(rows: list[tuple], truth: dict[str, str]) -> dict:
    """Injected speed series by their three verdicts and by where each was lost; flags with and
    without *promote*."""
    injected, losses, flags = Counter(), Counter(), Counter()
    for digest, verdict, base_only, recent, promoted in rows:
        t = truth.get(digest, "untouched")
        if t != "untouched":
            injected[f"{t}: {verdict} / base run alone {base_only} / recent level {recent}"] += 1
            losses[_loss(t, verdict, base_only)] += 1
        flagged = verdict in ("regression", "improvement")
        flags[f"{t} series"] += 1
        flags[f"{t} flagged"] += flagged if t == "untouched" else _right(t, verdict)
        flags[f"{t} flagged with promote"] += (
            (flagged or promoted) if t == "untouched" else (_right(t, verdict) or (promoted and _right(t, recent)))
        )
    return {
        "injected": dict(injected.most_common()),
        "losses": dict(losses.most_common()),
        "flags": dict(sorted(flags.items())),
    }


def _loss(truth: str, verdict: str, base_only: str) -> str:
    if _right(truth, verdict):
        return "found"
    if _right(truth, base_only):
        return f"found on the base run, taken back to {verdict} by the recent level"
    return f"{base_only} on the base run alone"


def pooled(records: list[dict], key: str) -> dict[str, int]:
    """``records``' counts under ``key`` summed over pairs and seeds."""
    total = Counter()
    for record in records:
        total.update(record[key])
    return dict(total.most_common())


def run(mirror_source: Path, work: Path, pairs: list[tuple[str, str]], seeds: int) -> dict:
    mirror = copy_mirror(mirror_source, work / "mirror")
    warehouse = work / "warehouse"
    refresh(warehouse, mirror)
    names = (mirror / "gh-pages" / RUNS_PATH).read_text().split()
    out: dict = {"identical": {}, "injected": []}
    for base, head in pairs:
        rows = _judged(warehouse / CATALOG_FILE, base, head)
        out["identical"][f"{base} → {head}"] = {
            "series": len(rows),
            "flagged": sum(v in ("regression", "improvement") for _, v, *_ in rows),
            "flagged with promote": sum(v in ("regression", "improvement") or p for _, v, _, _, p in rows),
        }
        with open_database(warehouse / CATALOG_FILE) as con:
            run_series, lines = series(con, head), line_series(con, head)
        original = gzip.decompress((mirror / "gh-pages" / f"{run_path(head)}.gz").read_bytes())
        history, head_warehouse = history_until(mirror, warehouse, work, head, names)
        for seed in range(seeds):
            injection = choose(run_series, "workload", seed)
            name = f"c{len(out['injected']) + 1:06x}"
            changed = injected_csv(original, lines, injection, 1.0)
            copy, _ = injected_warehouse(history, head_warehouse, work / name, name, changed)
            truth = {d: injection.truth(d) for d in injection.slower | injection.faster}
            counted = _count(_judged(copy / CATALOG_FILE, base, name), truth)
            out["injected"].append({"pair": f"{base} → {head}", "seed": seed, **counted})
            shutil.rmtree(work / name)
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True, help="where to write the counts")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="the upstream mirror directory")
    parser.add_argument("--pairs", default=PAIRS, help="identical-commit run pairs, BASE:HEAD,...")
    parser.add_argument("--seeds", type=int, default=SEEDS, help="draws of the injected series per pair")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    args = parser.parse_args(argv)
    facts = machine(args.note)
    provenance = repository()
    with tempfile.TemporaryDirectory(prefix="liger-losses-") as work:
        counts = run(args.mirror, Path(work), _pairs(args.pairs), args.seeds)
    counts["pooled"] = {key: pooled(counts["injected"], key) for key in ("losses", "flags")}
    result = {
        "command": "python -m benchmarks.verdict_losses",
        **provenance,
        "machine": facts,
        **counts,
    }
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({"identical": counts["identical"], **counts["pooled"]}, indent=1, ensure_ascii=False))
    for record in counts["injected"]:
        print(record["pair"], record["seed"], json.dumps(record["flags"]))
    return result


if __name__ == "__main__":
    main()
