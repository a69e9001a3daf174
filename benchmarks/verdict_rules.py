"""The anchor rules the verdict benchmark sets beside the warehouse's own (docs/VERDICTS.md,
"How well it works"): each judges one series between a base and a head run from plain numbers.

Every rule answers 'regression', 'improvement', 'unchanged', or None when it cannot judge the
series at all (no golden result, too little history). Lower is better for every unit the
history holds (ms, MB); ``Case.lower_is_better`` carries the direction.

* ``old_rule``: the warehouse's rule before issue 12: p50 moved by more than 5% and the two
  p20-p80 bands do not overlap.
* ``golden_rule``: Liger's dashboard: a result more than 10% above the kernel's golden run is
  flagged; here also one more than 10% below, so that speedups can be found. It judges the
  head alone, against the golden result of the same kernel, pass, provider, metric and
  workload on whatever GPU the golden run used, as the dashboard does.
* ``base_ten_percent_rule``: the dashboard's 10% with the base run as the reference.
* ``lookback_z_rule``: Conbench's lookback z-score: the distribution is the base run and the
  runs before it (at most ``LOOKBACK`` of them); z = (head - their mean) / their standard
  deviation (Bessel-corrected); a regression or improvement when |z| > ``Z_THRESHOLD``. As in
  Conbench, a distribution without spread (fewer than two points, or all equal) gives z = 0.
* ``otava_rule``: Apache Otava's significance test at its defaults: e-divisive change points
  of the base run and the runs before it (``compute_change_points``, window 50, p 0.001), then
  Otava's two-sided t-test (``TTestSignificanceTester``) of the stable range since the last
  change point against the head; a change when p < 0.001.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from otava.analysis import TTestSignificanceTester, compute_change_points

OLD_THRESHOLD = 0.05
GOLDEN_THRESHOLD = 0.10
LOOKBACK = 100  # Conbench's DISTRIBUTION_COMMITS default
Z_THRESHOLD = 5.0  # Conbench's Z_SCORE default
OTAVA_PVALUE = 0.001  # Otava's max_pvalue default
OTAVA_WINDOW = 50  # Otava's window_len default


@dataclass(frozen=True)
class Point:
    p20: float
    p50: float
    p80: float


@dataclass(frozen=True)
class Case:
    """One series on both sides of a comparison, with what the anchor rules read."""

    series_digest: str
    lower_is_better: bool
    base: Point
    head: Point
    # p50 of the base run and the runs before it that hold the series, oldest first
    prior: tuple[float, ...]
    golden_p50: float | None


Rule = Callable[[Case], str | None]


def _direction(head: float, reference: float, lower_is_better: bool) -> str:
    return "regression" if (head > reference) == lower_is_better else "improvement"


def old_rule(case: Case) -> str:
    b, h = case.base, case.head
    if h.p20 <= b.p80 and b.p20 <= h.p80:
        return "unchanged"
    if b.p50 > 0 and abs(h.p50 / b.p50 - 1) <= OLD_THRESHOLD:
        return "unchanged"
    return _direction(h.p50, b.p50, case.lower_is_better)


def _ten_percent(head: float, reference: float | None, lower_is_better: bool) -> str | None:
    if reference is None or reference <= 0:
        return None
    if abs(head / reference - 1) <= GOLDEN_THRESHOLD:
        return "unchanged"
    return _direction(head, reference, lower_is_better)


def golden_rule(case: Case) -> str | None:
    return _ten_percent(case.head.p50, case.golden_p50, case.lower_is_better)


def base_ten_percent_rule(case: Case) -> str | None:
    return _ten_percent(case.head.p50, case.base.p50, case.lower_is_better)


def lookback_z(head: float, prior: tuple[float, ...]) -> float:
    window = prior[-LOOKBACK:]
    if len(window) < 2:
        return 0.0
    mean = math.fsum(window) / len(window)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in window) / (len(window) - 1))
    return (head - mean) / sd if sd > 0 else 0.0


def lookback_z_rule(case: Case) -> str | None:
    if len(case.prior) < 2:
        return None
    z = lookback_z(case.head.p50, case.prior)
    if abs(z) <= Z_THRESHOLD:
        return "unchanged"
    return _direction(z, 0.0, case.lower_is_better)


@cache
def stable_range(prior: tuple[float, ...]) -> tuple[float, ...]:
    """The points since Otava's last change point in ``prior`` (all of it when there is none)."""
    window = list(prior[-(OTAVA_WINDOW - 1) :])
    points, _ = compute_change_points(window, window_len=OTAVA_WINDOW, max_pvalue=OTAVA_PVALUE)
    return tuple(window[points[-1].index :]) if points else tuple(window)


def otava_rule(case: Case) -> str | None:
    if len(case.prior) < 2:
        return None
    reference = stable_range(case.prior)
    stats = TTestSignificanceTester(OTAVA_PVALUE).compare(list(reference), [case.head.p50])
    if not stats.pvalue < OTAVA_PVALUE:  # NaN (no spread, no change) is no change
        return "unchanged"
    return _direction(stats.mean_2, stats.mean_1, case.lower_is_better)


GOLDEN = "golden run +10%"
ANCHOR_RULES: dict[str, Rule] = {
    "old rule": old_rule,
    GOLDEN: golden_rule,
    "base run +10%": base_ten_percent_rule,
    "lookback z-score": lookback_z_rule,
    "Otava t-test": otava_rule,
}
