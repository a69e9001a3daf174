"""Summaries of repeated measurements: the median and the spread (min to max)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    n: int

    @property
    def spread(self) -> float:
        """(max - min) / median: how much the runs disagree, as a fraction."""
        return (self.high - self.low) / self.median if self.median else 0.0


def summarize(values: list[float]) -> Summary:
    if not values:
        return Summary(float("nan"), float("nan"), float("nan"), 0)
    return Summary(statistics.median(values), min(values), max(values), len(values))


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")
