"""Apache Otava's split step, resumable: the change points of one series, from scratch or
resumed from the state of a prior refresh, identical either way.

Incremental refresh
-------------------
Otava's split step walks the series with windows of ``WINDOW`` points: a window starts at
``start``, its weak change points are found in ``series[start:start + WINDOW]`` alone, and the
next window starts at ``max(last change point found, start + WINDOW // 2)``. A window that
ends inside the old points (a *complete* window) sees the same values after points are
appended, so it finds the same weak change points and hands the same start to the next one.
``change_point_state`` keeps, per series, the weak change points of the complete windows and
the start of the first incomplete window (``resume_index``); a refresh runs the windows from
there on, then Otava's final t-tests and ``merge`` over the whole series, exactly as
``compute_change_points`` does. Each of those t-tests compares the points of two segments,
so the state also keeps the t-tests read last time whose segments end before the last point,
and a t-test of the same segments is taken from it instead of computed again: the same points
give the same floats (only segments that reach the end change when points are appended).
The result is therefore identical to a computation from scratch (same indices, same p-values,
bit for bit): ``tests/test_change_points.py`` checks it on appended steps, drifts, spikes and
noise, and on the 1,000-run benchmark history one appended run gave byte-identical
``fact_change_point`` and ``change_point_state`` parts resumed and from scratch. The window
loop (``split_windows``) is Otava 0.8.0's ``split`` loop, written out so it can stop and
resume, and ``merge`` is Otava 0.8.0's, written out so its t-tests can be reused; the tests
compare them with ``compute_change_points`` itself, so an Otava upgrade that changes the
algorithm fails them rather than drifting.

This is not ``compute_change_points(new_data=..., old_weak_cp=...)``, Otava's own incremental
mode, because that mode does not reproduce a computation from scratch. Measured with Otava
0.8.0, one run appended to a series analysed from scratch: on the 1,000-run benchmark history
52 of 275 sampled series (1 in 20 of those with at least 60 runs) get other change points than
from scratch; on the synthetic series of the tests, 110 of 750 appends to a drift and 3 of 750
to spikes differ, none to noise or steps (a test pins one drift case). Two reasons: it
restarts the windows on its own grid, at the last multiple of ``WINDOW // 2`` (or the last old
change point) before ``(new_data / WINDOW + 4) * WINDOW`` points from the end, which is not
where the windows of a full run fall; and the weak change points it is handed back are the
*merged* list (``compute_change_points`` returns the list ``merge`` pruned in place), so a weak
change point before the restart that the old merge removed never comes back, though a merge
over the longer series might keep it. Resuming the window chain also costs less than Otava's
mode: about two windows per appended run instead of nine.

A series resumes when its state was written by the same ``method()`` and its first
``points`` points (seq and p50) are those the state was computed from (``prefix_digest``); a
series with new points is thus resumed from its state, and a series whose history changed
(a run restated, removed or inserted before the last one analyzed), a new series, or any
series after a change of ``method()`` is computed from scratch. A series with no new point
reuses its stored change points without running Otava at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from otava.analysis import TTestSignificanceTester, TTestStats
from otava.change_point_divisive.base import CandidateChangePoint, ChangePoint
from otava.change_point_divisive.calculator import PairDistanceCalculator
from otava.change_point_divisive.detector import ChangePointDetector

from liger_warehouse.analysis.otava_method import (
    FIRST_PASS_PVALUE,
    MAX_PVALUE,
    MIN_MAGNITUDE,
    MIN_POINTS,
    STEP,
    WINDOW,
)

_POINT = np.dtype([("seq", "<i8"), ("p50", "<f8")])
# compare() does not read the tester's p-value.
_TESTER = TTestSignificanceTester(FIRST_PASS_PVALUE)


# The t-tests an analysis read, by the points they compare: [left, index) and [index, right).
TTests = dict[tuple[int, int, int], TTestStats]
_STATS = ("mean_1", "mean_2", "std_1", "std_2", "pvalue")


@dataclass
class SeriesState:
    """What a later refresh needs to resume one series (a row of ``change_point_state``)."""

    points: int
    last_seq: int
    prefix_digest: str
    resume_index: int
    weak: list[CandidateChangePoint]  # the weak change points of the complete windows, by index
    tests: TTests  # the t-tests of the final pass and merge that end before the last point
    found: list[tuple[int, float]]  # (index, pvalue) of the change points reported

    @classmethod
    def from_row(cls, row: dict) -> SeriesState:
        """The state of a ``change_point_state`` row (as ``pyarrow``'s ``to_pylist`` gives it)."""
        return cls(
            points=row["points"],
            last_seq=row["last_seq"],
            prefix_digest=row["prefix_digest"],
            resume_index=row["resume_index"],
            weak=[CandidateChangePoint(index=w["index"], qhat=w["qhat"]) for w in row["weak_change_points"]],
            tests={
                (t["left"], t["index"], t["right"]): TTestStats(**{stat: t[stat] for stat in _STATS})
                for t in row["t_tests"]
            },
            found=[(c["index"], c["pvalue"]) for c in row["change_points"]],
        )

    def to_row(self, series_digest: str, label: str) -> dict:
        """The ``change_point_state`` row of series ``series_digest``, computed by ``label``."""
        return {
            "series_digest": series_digest,
            "points": self.points,
            "last_seq": self.last_seq,
            "prefix_digest": self.prefix_digest,
            "resume_index": self.resume_index,
            "weak_change_points": [{"index": w.index, "qhat": w.qhat} for w in self.weak],
            "t_tests": [
                {"left": left, "index": index, "right": right, **{s: float(getattr(stats, s)) for s in _STATS}}
                for (left, index, right), stats in sorted(self.tests.items())
            ],
            "change_points": [{"index": i, "pvalue": p} for i, p in self.found],
            "method": label,
        }


def split_windows(
    values: list[float], start: int, settled: dict[int, CandidateChangePoint]
) -> tuple[list[CandidateChangePoint], int, dict[int, CandidateChangePoint]]:
    """Otava's sliding windows (``otava.analysis.split``) from ``start`` to the end.

    ``settled`` holds the weak change points of the complete windows before ``start``.
    Returns every weak change point, sorted by index, the start of the first incomplete window
    and the weak change points of all complete windows (the state a later call resumes from).
    """
    n = len(values)
    tester = TTestSignificanceTester(FIRST_PASS_PVALUE)
    found = dict(settled)
    settled = dict(settled)
    resume = None
    while start < n:
        end = min(start + WINDOW, n)
        if resume is None and start + WINDOW > n:
            resume = start
        detector = ChangePointDetector(significance_tester=tester, calculator=PairDistanceCalculator)
        # A list, not an array: Otava's detector slices [start:end] only out of a sequence.
        new = detector.get_change_points(values, start, end)
        for cp in new:
            candidate = CandidateChangePoint(index=int(cp.index), qhat=float(cp.qhat))
            # Like split(): a change point found again by a later window keeps its first finding.
            found.setdefault(candidate.index, candidate)
            if resume is None:
                settled.setdefault(candidate.index, candidate)
        start = max(int(new[-1].index) if new else 0, start + STEP)
    ordered = [found[i] for i in sorted(found)]
    return ordered, (start if resume is None else resume), settled


def final_pass(
    values: np.ndarray, weak: list[CandidateChangePoint], known: TTests
) -> tuple[list[tuple[int, float]], TTests]:
    """Otava's final pass over the weak change points (the t-tests of ``split``), then its
    ``merge``. A t-test in ``known`` is taken as it is: the same points give the same floats.
    Returns the (index, pvalue) of the change points and the t-tests read that a later refresh
    can reuse (those that end before the last point, which moves with every appended point)."""
    n = len(values)
    read: TTests = {}

    def t_test(left: int, index: int, right: int) -> TTestStats:
        key = (left, index, right)
        stats = known.get(key)
        if stats is None:
            stats = _TESTER.compare(values[left:index], values[index:right])
        if right < n:
            read[key] = stats
        return stats

    points = [ChangePoint.from_candidate(cp, t_test(*_segments(weak, i, n))) for i, cp in enumerate(weak)]
    found = merge(points, t_test, n)
    return [(int(cp.index), float(cp.stats.pvalue)) for cp in found], read


def _segments(points: list[CandidateChangePoint], i: int, n: int) -> tuple[int, int, int]:
    """(left, index, right): ``points[i]`` between its neighbours, the start and the end ``n`` of
    the series where it has none. Otava's t-test of it compares [left, index) with [index, right)."""
    left = points[i - 1].index if i else 0
    return left, points[i].index, points[i + 1].index if i + 1 < len(points) else n


def merge(points: list[ChangePoint], t_test: Callable[[int, int, int], TTestStats], n: int) -> list[ChangePoint]:
    """Otava 0.8.0's ``merge(points, values, MAX_PVALUE, MIN_MAGNITUDE)``, written out so that its
    t-tests go through ``t_test(left, index, right)``: drop the weakest change point (the
    largest p-value, or when every p-value passes, the smallest change) until every one is
    significant and large enough, testing its two neighbours again after each drop."""
    while points:
        weakest = max(points, key=lambda c: c.stats.pvalue)
        if weakest.stats.pvalue < MAX_PVALUE:
            weakest = min(points, key=lambda c: c.stats.change_magnitude())
            if weakest.stats.change_magnitude() > MIN_MAGNITUDE:
                return points
        at = points.index(weakest)
        del points[at]
        for i in (at, at + 1):
            if i < len(points):
                points[i] = ChangePoint.from_candidate(points[i].to_candidate(), t_test(*_segments(points, i, n)))
    return points


def analyze(seqs: np.ndarray, values: np.ndarray, prior: SeriesState | None = None) -> tuple[SeriesState, str]:
    """Change points of one series (its points in run order), resumed from ``prior`` when its
    first points are those ``prior`` was computed from. Returns the new state and how it was
    computed: "resumed", "unchanged" or "from_scratch"."""
    points = np.empty(len(values), dtype=_POINT)
    points["seq"] = seqs
    points["p50"] = values
    digest = hashlib.sha256()
    usable = False
    if prior is not None and prior.points <= len(points):
        digest.update(points[: prior.points].tobytes())
        usable = digest.hexdigest()[:32] == prior.prefix_digest
        digest.update(points[prior.points :].tobytes())
    else:
        digest.update(points.tobytes())
    state = SeriesState(
        points=len(points),
        last_seq=int(seqs[-1]),
        prefix_digest=digest.hexdigest()[:32],
        resume_index=0,
        weak=[],
        tests={},
        found=[],
    )
    if usable and prior.points == len(points):
        return prior, "unchanged"
    if len(points) < MIN_POINTS:
        return state, "resumed" if usable else "from_scratch"
    start, settled, known = 0, {}, {}
    if usable:
        start = prior.resume_index
        settled = {w.index: w for w in prior.weak}
        known = prior.tests
    weak, state.resume_index, settled = split_windows(values.tolist(), start, settled)
    state.weak = [settled[i] for i in sorted(settled)]
    # An array here: the same floats as from a list, without converting a slice per t-test.
    state.found, state.tests = final_pass(values, weak, known)
    return state, "resumed" if usable else "from_scratch"
