"""What ``benchmarks/real_history.py`` reads: the mirror's consecutive gh-pages runs with the code
between them (its ``compare/`` files), and from the warehouse each kernel's file stems, each run's
points and a rule's verdicts. Which code changed is worked out here in Python, apart from the
lake's own ``kernel_file_stem``, so that the benchmark does not grade the lake with itself.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from pathlib import Path

import duckdb

from liger_warehouse.upstream.compare import run_pair
from liger_warehouse.upstream.sources import RUNS_PATH

# The rule of sql/macros/kernel_file_stem.sql: a file directly in one of these folders belongs
# to the kernels one of whose stems is its name without `.py` and without a `benchmark_` prefix.
STEM = re.compile(
    r"^(?:src/liger_kernel/(?:ops|transformers|chunked_loss)|benchmark/scripts)/(?:benchmark_)?([^/]+)\.py$"
)
# Commit titles that announce a change of speed or memory.
PERFORMANCE = re.compile(r"speed ?up|faster|optimi[sz]|perf|slow|regression|latency|throughput", re.IGNORECASE)
# A behind or diverged range lists only the head's side of the merge base: the base run's own
# commits, code that changed too, are not in `files`.
JUDGED = ("ahead", "identical")
FILES_CAP = 300  # GitHub lists at most 300 files of a range: a longer list is cut
PRIOR_RUNS = 5
FLAGS = ("regression", "improvement")
OUTLIER_COUNTS = ("regressions", "regressions_within_median", "improvements", "improvements_within_median",
                  "without_history")  # fmt: skip


def file_stem(filename: str) -> str | None:
    match = STEM.match(filename)
    return match.group(1) if match else None


def _squashed(text: str) -> str:
    """Letters and digits only, lower case: 'LayerNorm' and 'layer_norm' read alike."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass(frozen=True)
class Pair:
    """Two consecutive gh-pages runs in upload order and, when the mirror holds their compare, the
    code between them."""

    base: str
    head: str
    status: str | None  # None: the mirror has no compare of the two commits
    files: tuple[str, ...]
    titles: tuple[str, ...]  # the first line of each commit of the range

    @property
    def label(self) -> str:
        return f"{self.base} → {self.head}"

    @property
    def skipped(self) -> str | None:
        """Why the code between the runs is not known, or None."""
        if self.status is None:
            return "no compare file"
        if self.status not in JUDGED:
            return f"status {self.status}: the base run's own commits are not listed"
        if len(self.files) >= FILES_CAP:
            return f"{len(self.files)} files: GitHub's list may be cut"
        return None

    @cached_property
    def changed_stems(self) -> frozenset[str]:
        return frozenset(s for f in self.files if (s := file_stem(f)) is not None)

    @cached_property
    def performance_titles(self) -> tuple[str, ...]:
        return tuple(t for t in self.titles if PERFORMANCE.search(t))

    def touched(self, stems: dict[str, frozenset[str]]) -> frozenset[str]:
        """The kernels (of ``stems``: kernel -> its file stems) whose files the range changed."""
        return frozenset(k for k, own in stems.items() if own & self.changed_stems)

    def named(self, kernel: str, stems: frozenset[str]) -> bool:
        """Whether a performance title names the kernel or one of its stems (other than `utils`)."""
        names = {_squashed(s) for s in stems - {"utils"}} | {_squashed(kernel)}
        return any(n in _squashed(t) for t in self.performance_titles for n in names)


def runs(mirror: Path) -> list[str]:
    """The gh-pages runs in upload order (commits.txt)."""
    return (mirror / "gh-pages" / RUNS_PATH).read_text().split()


def read_pairs(mirror: Path) -> list[Pair]:
    pairs = []
    for base, head in pairwise(runs(mirror)):
        path = mirror / "compare" / f"{run_pair(base, head).key}.json"
        if not path.is_file():
            pairs.append(Pair(base, head, None, (), ()))
            continue
        data = json.loads(path.read_text())
        titles = tuple(c["commit"]["message"].split("\n", 1)[0].strip() for c in data["commits"])
        pairs.append(Pair(base, head, data["status"], tuple(f["filename"] for f in data["files"]), titles))
    return pairs


def kernel_stems(con: duckdb.DuckDBPyConnection) -> dict[str, frozenset[str]]:
    """Each kernel's file stems, as the lake's `kernel_files` maps them."""
    stems: dict[str, set[str]] = {}
    for kernel, stem in con.execute("select kernel, stem from kernel_files").fetchall():
        stems.setdefault(kernel, set()).add(stem)
    return {k: frozenset(v) for k, v in stems.items()}


def run_points(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, float]]:
    """run -> series -> p50, from the gh-pages results themselves (not `fact_run_point`): a run's
    point of a series is its most recently observed result of that series."""
    rows = con.execute(
        "select source_key, series_digest, p50 from fact_result where source = 'gh-pages' "
        "order by source_key, series_digest, observed_at, result_digest desc"
    ).fetchall()
    points: dict[str, dict[str, float]] = {}
    for run, digest, p50 in rows:  # the last row of a (run, series) is the newest observation
        points.setdefault(run, {})[digest] = p50
    return points


def prior_medians(points: dict[str, dict[str, float]], order: list[str], head: str) -> dict[str, float]:
    """series -> the median p50 of the ``PRIOR_RUNS`` most recent runs before ``head`` (in ``order``,
    upload order) that hold the series."""
    seen: dict[str, list[float]] = {}
    for run in reversed(order[: order.index(head)]):
        for digest, p50 in points.get(run, {}).items():
            values = seen.setdefault(digest, [])
            if len(values) < PRIOR_RUNS:
                values.append(p50)
    return {digest: statistics.median(values) for digest, values in seen.items()}


@dataclass(frozen=True)
class Verdict:
    """One row of a rule's answer, with what the benchmark groups it by."""

    series_digest: str
    kernel: str
    verdict: str
    head_p50: float
    is_liger: bool
    lower_is_better: bool


def call(template: str, base: str, head: str) -> str:
    """``template`` (a call of a table macro with ``{base}`` and ``{head}``) for two runs."""
    return template.format(base=_quoted(base), head=_quoted(head))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def verdicts(con: duckdb.DuckDBPyConnection, template: str, base: str, head: str) -> list[Verdict]:
    """The rows of the rule ``template`` for two runs."""
    rows = con.execute(
        f"select r.series_digest, r.kernel, r.verdict, r.head_p50, s.is_liger, lower_is_better(s.unit) "
        f"from {call(template, base, head)} as r join dim_series as s using (series_digest)"
    ).fetchall()
    return [Verdict(*row) for row in rows]


def false_alarms(rows: list[Verdict], kernels: frozenset[str]) -> dict:
    """How the Liger series of ``kernels`` (whose code did not change) were judged."""
    judged = [r.verdict for r in rows if r.is_liger and r.kernel in kernels]
    counts = {v: judged.count(v) for v in (*FLAGS, "environment", "inconclusive")}
    flagged = counts["regression"] + counts["improvement"]
    return {"series": len(judged), "flagged": flagged, **counts, "share": _share(flagged, len(judged))}


def outliers(rows: list[Verdict], medians: dict[str, float]) -> dict:
    """Changes the head shows only against its base: a regression whose head is no worse than the
    median of the runs before it, an improvement whose head is no better."""
    out = dict.fromkeys(OUTLIER_COUNTS, 0)
    for r in rows:
        if r.verdict not in FLAGS:
            continue
        kind = "regressions" if r.verdict == "regression" else "improvements"
        out[kind] += 1
        median = medians.get(r.series_digest)
        if median is None:
            out["without_history"] += 1
            continue
        at_or_below, at_or_above = r.head_p50 <= median, r.head_p50 >= median
        no_worse, no_better = (at_or_below, at_or_above) if r.lower_is_better else (at_or_above, at_or_below)
        out[f"{kind}_within_median"] += no_worse if kind == "regressions" else no_better
    return out


def found(rows: list[Verdict], kernel: str) -> dict:
    """Whether the rule flags the kernel's Liger series, and in which direction mostly."""
    judged = [r.verdict for r in rows if r.is_liger and r.kernel == kernel]
    slower, faster = judged.count("regression"), judged.count("improvement")
    dominant = None if not slower + faster else ("tie" if slower == faster else FLAGS[faster > slower])
    return {"series": len(judged), "regression": slower, "improvement": faster, "found": bool(slower + faster),
            "dominant": dominant}  # fmt: skip


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None
