"""The verdict benchmark's records and results, their tallies as shares (flagged, inconclusive,
recall, coverage), and Markdown tables of them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.verdict_data import Grid
    from benchmarks.view_latency import Timing

NEW = "new rule"
FLAGGED = ("regression", "improvement")
RIGHT = {("slower", "regression"), ("faster", "improvement")}


@dataclass
class Record:
    """The verdicts of one rule in one comparison, tallied by (metric, truth, verdict)."""

    experiment: str  # 'identical', or the injection scope
    pair: str
    drift: float
    seed: int | None
    rule: str
    tally: Counter = field(default_factory=Counter)


@dataclass
class Results:
    records: list[Record]
    pairs: list[tuple[str, str]]
    seeds: int
    latency: list[Timing]
    golden_other_gpu: dict[str, tuple[int, int]]
    runs: int
    newest_run: str
    results: int
    build_seconds: float
    refresh_seconds: list[float]
    default_mismatches: int
    grid: Grid
    seconds: float = 0.0


@dataclass(frozen=True)
class Share:
    part: int
    whole: int

    @property
    def value(self) -> float:
        return self.part / self.whole if self.whole else float("nan")

    def __str__(self) -> str:
        return "-" if not self.whole else f"{100 * self.value:.1f}%"


def pooled(
    results: Results, experiment: str, rule: str, drift: float | None = None, pair: str | None = None
) -> Counter:
    """The tallies of ``rule`` summed over the seeds (and pairs, unless ``pair``)."""
    total: Counter = Counter()
    for r in results.records:
        if (r.experiment, r.rule) == (experiment, rule) and drift in (None, r.drift) and pair in (None, r.pair):
            total.update(r.tally)
    return total


def flagged(tally: Counter, truth: str = "untouched") -> Share:
    whole = sum(n for (_, t, _), n in tally.items() if t == truth)
    return Share(sum(n for (_, t, v), n in tally.items() if t == truth and v in FLAGGED), whole)


def inconclusive(tally: Counter, truth: str = "untouched") -> Share:
    whole = sum(n for (_, t, _), n in tally.items() if t == truth)
    return Share(sum(n for (_, t, v), n in tally.items() if t == truth and v == "inconclusive"), whole)


def recall(tally: Counter, metric: str | None = None) -> Share:
    injected = {k: n for k, n in tally.items() if k[1] != "untouched" and metric in (None, k[0])}
    return Share(sum(n for (_, t, v), n in injected.items() if (t, v) in RIGHT), sum(injected.values()))


def coverage(tally: Counter) -> Share:
    judged = sum(n for (_, _, v), n in tally.items() if v not in ("inconclusive", "not judged"))
    return Share(judged, sum(tally.values()))


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    align = ["---"] + ["---:"] * (len(header) - 1)
    return ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|", *("| " + " | ".join(r) + " |" for r in rows)]
