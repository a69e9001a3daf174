"""The verdict benchmark's results as Markdown tables and a plot: the section "How well it works"
of docs/VERDICTS.md, written between its own markers so the rest of the page is left alone."""

from __future__ import annotations

import os
import platform
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from benchmarks import verdict_curve
from benchmarks.verdict_inject import DRIFT, FASTER, FASTER_SHARE, SCOPES, SLOWER, SLOWER_SHARE
from benchmarks.verdict_rules import ANCHOR_RULES
from benchmarks.verdict_tally import NEW, Record, Results, Share, coverage, flagged, inconclusive, pooled, recall, table
from liger_warehouse.report.build import vl_version
from liger_warehouse.report.png import render

HEADING = "## How well it works"
BEGIN, END = "<!-- verdict-benchmark:begin -->", "<!-- verdict-benchmark:end -->"
PLOT = "verdicts-benchmark.png"
AS_OF_HEAD = "new rule, noise as of the judged run"
HELD_OUT = "new rule, noise from earlier runs only"
RULES = (*ANCHOR_RULES, NEW, AS_OF_HEAD, HELD_OUT)
# Targets of issue 12 (shares)
MAX_FLAGGED, MAX_INCONCLUSIVE, MIN_RECALL, MAX_UNTOUCHED_FLAGGED = 0.01, 0.20, 0.75, 0.02
MAX_LATENCY = 1.0  # seconds: "well under a second"


def _new(rule: str) -> bool:
    return rule.startswith(NEW)


def _listed(values: tuple[float, ...], percent: bool = False) -> str:
    """``values`` as prose: "a, b and c" (as percentages: "5%, 5.5% and 6%")."""
    *words, last = [f"{v * 100:g}%" if percent else f"{v:g}" for v in values]
    return f"{', '.join(words)} and {last}" if words else last


def _with_count(share: Share) -> str:
    return f"{share} ({share.part:,})"


def false_positive_table(results: Results) -> list[str]:
    pairs = [f"{b} → {h}" for b, h in results.pairs]
    header = ["rule"] + [f"{p}: {m}" for p in pairs for m in ("flagged", "inconclusive")]
    rows = []
    for rule in RULES:
        row = [rule]
        for pair in pairs:
            t = pooled(results, "identical", rule, pair=pair)
            row += [_with_count(flagged(t)), _with_count(inconclusive(t)) if _new(rule) else "-"]
        rows.append(row)
    return table(header, rows)


def _each(results: Results, experiment: str, rule: str, drift: float) -> list[Record]:
    return [r for r in results.records if (r.experiment, r.rule, r.drift) == (experiment, rule, drift)]


def _with_range(share: Share, each: list[Share]) -> str:
    """The pooled share and, over the single comparisons (pairs and seeds), its range."""
    values = [100 * s.value for s in each if s.whole]
    return f"{share} ({min(values):.0f}-{max(values):.0f})" if len(values) > 1 else str(share)


def recall_table(results: Results, scope: str) -> list[str]:
    header = ["rule"]
    for drift in (1.0, DRIFT):
        tag = "" if drift == 1.0 else f" (x{drift:g} drift)"
        header += [f"recall{tag}", "speed only", "untouched flagged", "untouched inconclusive"]
    rows = []
    for rule in RULES:
        row = [rule]
        for drift in (1.0, DRIFT):
            t = pooled(results, scope, rule, drift)
            row += [
                _with_range(recall(t), [recall(r.tally) for r in _each(results, scope, rule, drift)]),
                str(recall(t, "speed")),
                str(flagged(t)),
                str(inconclusive(t)) if _new(rule) else "-",
            ]
        rows.append(row)
    return table(header, rows)


def coverage_table(results: Results) -> list[str]:
    rows = [
        [rule] + [str(coverage(pooled(results, experiment, rule))) for experiment in ("identical", *SCOPES)]
        for rule in RULES
    ]
    return table(["rule", "identical pairs", "workload injections", "sweep injections"], rows)


def _lowest(dial: tuple[float, ...]) -> str:
    low = min(dial)
    return "0 (the threshold and the drift alone)" if low == 0 else f"{low:g}"


def sensitivity_table(results: Results) -> list[str]:
    header = ["constants", "identical: flagged", "inconclusive"]
    for scope in SCOPES:
        header += [f"{scope}: recall", "untouched flagged", "inconclusive", f"recall (x{DRIFT:g})", "untouched flagged"]
    rows = []
    for setting in results.grid.sensitivity:
        rule = f"{NEW}: {setting.label}"
        same = pooled(results, "identical", rule)
        row = [setting.label, str(flagged(same)), str(inconclusive(same))]
        for scope in SCOPES:
            calm, drift = pooled(results, scope, rule, 1.0), pooled(results, scope, rule, DRIFT)
            row += [
                str(recall(calm)),
                str(flagged(calm)),
                str(inconclusive(calm)),
                str(recall(drift)),
                str(flagged(drift)),
            ]
        rows.append(row)
    return table(header, rows)


def latency_table(results: Results) -> list[str]:
    rows = []
    for t in results.latency:
        rows.append([f"`{t.view}`", f"{t.rows:,}", _ms(t.fresh), _spread(t.fresh), _ms(t.warm), _spread(t.warm)])
    return table(["query", "rows", "fresh median", "fresh spread", "warm median", "warm spread"], rows)


def _ms(seconds: list[float]) -> str:
    return f"{sorted(seconds)[len(seconds) // 2] * 1000:.0f} ms"


def _spread(seconds: list[float]) -> str:
    return f"{min(seconds) * 1000:.0f}-{max(seconds) * 1000:.0f} ms"


def _goal(ok: bool, short: float, unit: str = " points") -> str:
    return "met" if ok else f"**missed** by {short:.{1 if short >= 0.1 else 2}f}{unit}"


def _at_most(share: Share, limit: float) -> str:
    return _goal(share.value <= limit, 100 * (share.value - limit))


def _at_least(share: Share, limit: float) -> str:
    return _goal(share.value >= limit, 100 * (limit - share.value))


def _target_rows(results: Results, rule: str) -> list[tuple[str, Share, str]]:
    """(target, measured, met or missed) for ``rule`` on every target of issue 12 but latency."""
    rows = []
    for base, head in results.pairs:
        t = pooled(results, "identical", rule, pair=f"{base} → {head}")
        rows.append((f"`{base}` → `{head}`: flagged ≤ 1%", flagged(t), _at_most(flagged(t), MAX_FLAGGED)))
        rows.append((f"`{base}` → `{head}`: inconclusive ≤ 20%", inconclusive(t),
                     _at_most(inconclusive(t), MAX_INCONCLUSIVE)))  # fmt: skip
    for scope in SCOPES:
        for drift in (1.0, DRIFT):
            t = pooled(results, scope, rule, drift)
            where = f"{scope} injections" + ("" if drift == 1.0 else f", x{drift:g} drift")
            rows.append((f"{where}: recall ≥ 75%", recall(t), _at_least(recall(t), MIN_RECALL)))
            rows.append((f"{where}: untouched flagged ≤ 2%", flagged(t), _at_most(flagged(t), MAX_UNTOUCHED_FLAGGED)))
            rows.append((f"{where}: untouched inconclusive ≤ 20%", inconclusive(t),
                         _at_most(inconclusive(t), MAX_INCONCLUSIVE)))  # fmt: skip
    return rows


TARGET_RULES = (NEW, AS_OF_HEAD, HELD_OUT)


def targets_table(results: Results) -> list[str]:
    columns = [_target_rows(results, rule) for rule in TARGET_RULES]
    rows = [
        [each[0][0]] + [cell for _, share, verdict in each for cell in (str(share), verdict)]
        for each in zip(*columns, strict=True)
    ]
    for t in results.latency:
        warm = sorted(t.warm)[len(t.warm) // 2]
        rows.append([f"`{t.view}` well under 1 s (warm)", _ms(t.warm), _goal(warm < MAX_LATENCY, warm - 1, " s")]
                    + [""] * 2 * (len(TARGET_RULES) - 1))  # fmt: skip
    header = ["target", NEW, "", "noise as of the judged run", "", "noise from earlier runs only", ""]
    return table(header, rows)


def _fewer(new: Counter, anchor: Counter) -> bool:
    return flagged(new).value < flagged(anchor).value


def _beaten(new: Counter, anchor: Counter) -> str:
    fewer, as_good = _fewer(new, anchor), recall(new).value >= recall(anchor).value
    if fewer and as_good:
        return "yes"
    return "no: " + ", ".join([*([] if fewer else ["not fewer flagged"]), *([] if as_good else ["lower recall"])])


def against_anchors_table(results: Results) -> list[str]:
    """For each anchor rule: does the new rule flag fewer series on the identical pairs, and in
    each injection scenario fewer untouched series at equal or better recall?"""
    same_new = pooled(results, "identical", NEW)
    header = ["anchor rule", "identical pairs: flagged (anchor / new)", "fewer"]
    for scope in SCOPES:
        for drift in (1.0, DRIFT):
            tag = f"{scope}" + ("" if drift == 1.0 else f", x{drift:g}")
            header += [f"{tag}: recall (anchor / new)", "untouched flagged", "beaten"]
    rows = []
    for rule in ANCHOR_RULES:
        same = pooled(results, "identical", rule)
        row = [rule, f"{flagged(same)} / {flagged(same_new)}", "yes" if _fewer(same_new, same) else "no"]
        for scope in SCOPES:
            for drift in (1.0, DRIFT):
                anchor, new = pooled(results, scope, rule, drift), pooled(results, scope, NEW, drift)
                row += [
                    f"{recall(anchor)} / {recall(new)}",
                    f"{flagged(anchor)} / {flagged(new)}",
                    _beaten(new, anchor),
                ]
        rows.append(row)
    return table(header, rows)


def _machine(load: float) -> str:
    cpu = platform.processor() or platform.machine()
    info = Path("/proc/cpuinfo")
    if info.is_file():
        names = [line.split(":", 1)[1] for line in info.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0].strip() if names else cpu
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, DuckDB {duckdb.__version__}; "
        f"load average {load:.1f} at the start"
    )


def _counts(results: Results) -> str:
    refreshes = sorted(results.refresh_seconds)
    median = refreshes[len(refreshes) // 2] if refreshes else float("nan")
    return (
        f"The run took {results.seconds / 60:.1f} min: the warehouse built in {results.build_seconds:.0f} s, "
        f"{len(refreshes)} injected runs each refreshed into a copy of it, or of the warehouse of the runs up to "
        f"their head (median {median:.0f} s), every rule and setting judged on each."
    )


def section(results: Results, load: float, command: str) -> str:
    golden = "; ".join(
        f"`{pair}`: {other:,} of {judged:,}" for pair, (other, judged) in results.golden_other_gpu.items()
    )
    mismatch = (
        "The scratch copy's noise, recomputed with the default constants, gives the published verdicts exactly."
        if not results.default_mismatches
        else f"**The scratch copy's noise, recomputed with the default constants, changes "
        f"{results.default_mismatches} verdicts**: the sensitivity rows are not comparable with the published rule."
    )
    lines = [
        HEADING,
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `{command}` on the upstream mirror "
        f"(`../shared`: {results.runs} gh-pages runs, the newest `{results.newest_run}`; {results.results:,} results).",
        f"Machine: {_machine(load)}. {_counts(results)}",
        "",
        "How it is measured (`benchmarks/verdicts.py`, `benchmarks/verdict_rules.py`):",
        "",
        "* **False positives**: every series in both runs of the same commit, judged base → head. "
        "Nothing changed, so every `regression` or `improvement` is false.",
        f"* **Recall**: for each pair, a copy of the head run with p20, p50 and p80 multiplied by {SLOWER:g} in "
        f"{SLOWER_SHARE:.0%} and by {FASTER:g} in {FASTER_SHARE:.0%} of the Liger series (*workload*), or in every "
        f"workload of {SLOWER_SHARE:.0%} and {FASTER_SHARE:.0%} of the Liger sweeps (*sweep*), {results.seeds} seeds "
        f"each, with and without every speed row (all providers) also multiplied by {DRIFT:g} (host drift). The "
        "copy is added to a copy of the mirror as the gh-pages run right after the head (commits.txt and its "
        "benchmark.csv.gz; the runs after the head left out, whose environment the copy does not carry), a copy of "
        "the warehouse of that history is refreshed over it by the real job, and each rule judges the real base run →"
        " the copy. *Recall* is the share of injected series called in the right direction, *untouched* the series "
        "left alone (baselines included; under drift they moved by 8%). Shares are pooled over the pairs and seeds; "
        "in brackets, the range of recall over the single comparisons.",
        "* **Coverage**: the share of series a rule gives a verdict other than `inconclusive`; an anchor rule "
        "leaves a series unjudged only when it has nothing to compare with (no golden result, fewer than two "
        "earlier runs).",
        "* **The judged run is history too.** The warehouse reads each series' noise from all of its gh-pages runs, "
        "so the judged step is part of it: the base → head step of an identical pair (for a pair that is not the "
        "newest, the noise also reads the runs that came after it), and for an injected copy (the newest run of its "
        "history) one step that is the injected change itself (a step of exactly 0 from the head for every untouched "
        "series, which makes their noise look smaller). Two more readings recompute each series' noise, in a scratch "
        "copy of the warehouse: *noise as of the judged run* from the run steps up to and including the judged run "
        "(what the nightly refresh that brought that run computed before it judged it; for the newest run this is the"
        " published noise), and *noise from earlier runs only* from the steps before it (the noise of a run it has "
        "never seen). The anchor rules never see the head: their history ends at the base run.",
        "",
        "The anchor rules:",
        "",
        "* **old rule**: p50 moved by more than 5% and the p20-p80 bands do not overlap.",
        "* **golden run +10%**: Liger's dashboard. The head's p50 against the same kernel, pass, provider, metric "
        "and workload in the kernel's golden run (`golden_commits.json`, the default commit for a kernel it does "
        "not name), on whatever GPU that run used, as the dashboard compares: more than 10% above is a "
        "regression, more than 10% below an improvement (the dashboard flags only the first). It judges the head "
        "alone, so a series that is off its golden run is flagged in both runs of an identical pair. Golden "
        f"results on another GPU than the head's: {golden} judged series.",
        "* **base run +10%**: the dashboard's 10% with the base run as the reference.",
        "* **lookback z-score** (Conbench): the distribution is the base run and up to 100 runs before it; "
        "z = (head - mean) / standard deviation (Bessel-corrected), a change when |z| > 5; z = 0 without "
        "spread, as Conbench sets it. (Conbench's newer releases also drop outliers first.)",
        "* **Otava t-test**: Apache Otava's e-divisive change points (`compute_change_points`, its defaults: "
        "window 50, p 0.001) over the base run and the runs before it; then Otava's own two-sided t-test "
        "(`TTestSignificanceTester`) of the runs since the last change point against the head, a change when "
        "p < 0.001.",
        "",
        "### False positives on identical-commit run pairs",
        "",
        *false_positive_table(results),
        "",
        "### Recall: single workloads",
        "",
        *recall_table(results, "workload"),
        "",
        "### Recall: whole sweeps",
        "",
        "The new rule judges a whole sweep's shift against the sweep's noise, which is larger than one workload's "
        "move against its sweep: a sweep-wide change is harder for it to see.",
        "",
        *recall_table(results, "sweep"),
        "",
        "### Coverage",
        "",
        *coverage_table(results),
        "",
        "### Targets",
        "",
        *targets_table(results),
        "",
        "### The new rule against each anchor rule, at its defaults",
        "",
        "*Fewer*: the new rule flags fewer series on the identical pairs. *Beaten*: in that injection scenario the "
        "new rule flags fewer untouched series at equal or better recall.",
        "",
        *against_anchors_table(results),
        "",
        "### The significance dial",
        "",
        "The new rule with `significance` (how many noise scales a change must stand out by) from "
        f"{_lowest(results.grid.dial)} to {max(results.grid.dial):g}, each series' noise as published; 5 is the "
        "default. Flagged shares of the identical pairs are pooled over both pairs.",
        "",
        *verdict_curve.dial_table(results),
        "",
        "### At equal recall",
        "",
        "Each anchor rule beside the new rule at the setting that reaches the anchor's recall with the fewest "
        "untouched series flagged, preferring one that also flags fewer series of the identical pairs. The "
        f"settings are the dial above, and the dial (significance {_listed(results.grid.significances)}) at the "
        f"thresholds {_listed(results.grid.other_thresholds, percent=True)} and, at each of "
        f"{_listed(results.grid.thresholds, percent=True)}, on the base run alone "
        "(`compare_runs(base, head, threshold := 0.07, recent := false)`: the recent level does not take back a "
        "change). *Beaten*: that setting flags fewer untouched series and fewer series of the identical pairs than "
        "the anchor does.",
        "",
        *verdict_curve.at_equal_recall_table(results),
        "",
        f"![recall against false alarms per rule]({PLOT})",
        "",
        "### Sensitivity to the constants",
        "",
        "Each series' noise recomputed from `sql/views/fact_series_spread.sql` and `sql/derived/fact_series_noise.sql` "
        "with one constant of "
        "`verdict_rule()` changed, in a scratch copy of each warehouse (the injected run stays "
        "in the history, as in the *new rule* rows above); a `sweep_quantile` row reads the sweep shifts "
        f"against its matching `sweep_scale` (0.6745 for 0.5, 1.6449 for 0.9). {mismatch}",
        "",
        *sensitivity_table(results),
        "",
        "### `compare_runs` latency",
        "",
        f"On the warehouse built from the mirror, {len(results.latency[0].warm) if results.latency else 0} runs "
        "each: on a fresh read-only connection per run and on one open connection after a warm-up run.",
        "",
        *latency_table(results),
        "",
    ]
    return "\n".join(lines)


def summary(results: Results) -> str:
    """What stdout shows: the tables without the prose."""
    parts = [
        "False positives",
        *false_positive_table(results),
        "",
        "Recall, single workloads",
        *recall_table(results, "workload"),
        "",
        "Recall, whole sweeps",
        *recall_table(results, "sweep"),
        "",
        "Coverage",
        *coverage_table(results),
        "",
        "Targets",
        *targets_table(results),
        "",
        "Sensitivity",
        *sensitivity_table(results),
        "",
        "Significance dial",
        *verdict_curve.dial_table(results),
        "",
        "At equal recall",
        *verdict_curve.at_equal_recall_table(results),
        "",
        "Latency",
        *latency_table(results),
        "",
        _counts(results),
    ]
    return "\n".join(parts)


def replace_section(text: str, new: str) -> str:
    """Swap the benchmark's block (between its markers) or, the first time, everything from the
    heading "How well it works" on, leaving the rest of the page alone."""
    block = f"{BEGIN}\n{new}{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1]
    if HEADING in text:
        return text.split(HEADING, 1)[0] + block + "\n"
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write(results: Results, doc: Path, load: float, command: str) -> None:
    doc.write_text(replace_section(doc.read_text(), section(results, load, command)))
    (doc.parent / PLOT).write_bytes(render(verdict_curve.plot(results).to_dict(), vl_version(), 1.5))
