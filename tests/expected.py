"""Expected answers of the analytic views, computed in plain Python from the raw mirror CSVs.

Nothing here imports the project: rows are read with csv + gzip and versions ordered with
``packaging``, so a test that compares these with the views checks the SQL against an
independent reading of upstream. The verdict rule is recomputed in tests/expected_verdicts.py.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, cached_property
from pathlib import Path

from packaging.version import Version

STEMS = ("all_benchmark_data", "all_benchmark_data_cutedsl", "all_benchmark_data_cutile")
BACKEND_BY_STEM = {
    "all_benchmark_data": "triton",
    "all_benchmark_data_cutedsl": "cutedsl",
    "all_benchmark_data_cutile": "cutile",
}


def _number(text: str) -> int | float:
    value = float(text)
    # 1.0 and 1 are one JSON number (RFC 8785 writes both as 1).
    return int(value) if value.is_integer() else value


@cache
def canonical_config(text: str) -> str:
    """The benchmark config as sorted compact JSON; a blank field is an empty config."""
    value = json.loads(text, parse_float=_number) if text.strip() else {}
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


HARNESS_BY_STEM = {
    "all_benchmark_data": "liger-kernel-bench",
    "all_benchmark_data_cutedsl": "liger-kernel-bench:cutedsl",
    "all_benchmark_data_cutile": "liger-kernel-bench:cutile",
}


def backend(stem: str | None, provider: str) -> str | None:
    """docs/SCHEMA.md: a backend the provider's name says, else the file's for a Liger
    provider, else none (a baseline)."""
    for word in re.split(r"[^a-z0-9]+", provider.lower()):
        if word in ("triton", "cutedsl", "cutile"):
            return word
    return BACKEND_BY_STEM.get(stem or "", "triton") if provider.startswith("liger") else None


def harness(stem: str | None) -> str:
    """The benchmark suite: one per upstream file, the gh-pages runs are the main file's."""
    return HARNESS_BY_STEM[stem or "all_benchmark_data"]


@dataclass(frozen=True)
class Row:
    """One upstream row; ``fields`` are the 15 CSV fields in header order."""

    source_key: str
    stem: str | None
    fields: tuple[str, ...]

    def get(self, name: str) -> str:
        return self.fields[HEADER.index(name)]

    @cached_property
    def series(self) -> tuple:
        """Same kernel, mode, provider, metric, GPU and workload (x value and config included),
        in the same benchmark suite."""
        g = self.get
        return (
            g("kernel_name"),
            g("kernel_operation_mode"),
            g("kernel_provider"),
            backend(self.stem, g("kernel_provider")),
            g("metric_name"),
            g("metric_unit"),
            g("gpu_name"),
            g("x_name"),
            g("x_label"),
            g("x_value"),
            canonical_config(g("extra_benchmark_config_str")),
            harness(self.stem),
        )

    @property
    def version(self) -> str:
        return self.get("liger_version")

    @cached_property
    def observed(self) -> datetime:
        return datetime.strptime(self.get("timestamp"), "%Y-%m-%d %H:%M:%S")

    def quantiles(self) -> tuple[float, float, float]:
        """(p20, p50, p80)."""
        return float(self.get("y_value_20")), float(self.get("y_value_50")), float(self.get("y_value_80"))


HEADER = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)


def _rows(path: Path) -> list[tuple[str, ...]]:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    rows = [tuple(r) for r in csv.reader(io.StringIO(text, newline="")) if r]
    assert rows[0] == HEADER, path
    return rows[1:]


@dataclass
class Revision:
    source_key: str
    label: str
    seq: int
    rows: list[Row]


@dataclass(eq=False)
class Mirror:
    """Every revision of every source, oldest first per source."""

    sources: dict[str, list[Revision]] = field(default_factory=dict)
    run_order: list[str] = field(default_factory=list)
    root: Path | None = None  # the folder read: its compare/ files are read where needed

    def results(self) -> set[Row]:
        return {row for revisions in self.sources.values() for rev in revisions for row in rev.rows}

    def current(self) -> set[Row]:
        return {row for revisions in self.sources.values() for row in revisions[-1].rows}


@cache
def read_mirror(mirror: Path) -> Mirror:
    """Read once per test session: the mirror is read-only."""
    out = Mirror(root=mirror)
    for stem in STEMS:
        commits_file = mirror / "commits" / f"{stem}.json"
        if not commits_file.is_file():
            continue
        path = f"benchmark/data/{stem}.csv"
        oldest_first = list(reversed(json.loads(commits_file.read_text())))
        out.sources[path] = [
            Revision(path, c["sha"], seq, [Row(path, stem, f) for f in _rows(mirror / "raw" / c["sha"] / f"{path}.gz")])
            for seq, c in enumerate(oldest_first, start=1)
        ]
    runs = (mirror / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()
    out.run_order = runs
    for seq, run in enumerate(runs, start=1):
        rows = [Row(run, None, f) for f in _rows(mirror / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz")]
        out.sources[run] = [Revision(run, run, seq, rows)]
    return out


def semantic_order(versions: set[str]) -> list[str]:
    return sorted(versions, key=Version)


def restatements(mirror: Mirror) -> dict[tuple[str, tuple], tuple]:
    """(source, fields) of every result no longer current -> (revision that changed it,
    replacement p50 or None)."""
    out = {}
    for source, revisions in mirror.sources.items():
        head = set(revisions[-1].rows)
        last_seen: dict[Row, int] = {}
        for index, rev in enumerate(revisions):
            for row in rev.rows:
                last_seen[row] = index
        for row, index in last_seen.items():
            if row in head:
                continue
            if index + 1 == len(revisions):
                out[(source, row.fields)] = (None, None)
                continue
            nxt = revisions[index + 1]
            same = [r for r in nxt.rows if r.series == row.series]
            newest = max(same, key=lambda r: r.observed) if same else None
            out[(source, row.fields)] = (nxt.label, newest.quantiles()[1] if newest else None)
    return out


def run_series(mirror: Mirror) -> dict[tuple, list[tuple[str, float, str]]]:
    """series -> [(run, p50, Liger version)] over the gh-pages runs in run order, newest result
    per run."""
    out: dict[tuple, list[tuple[str, float, str]]] = defaultdict(list)
    for run in mirror.run_order:
        newest: dict[tuple, Row] = {}
        for row in mirror.sources[run][0].rows:
            if row.series not in newest or row.observed > newest[row.series].observed:
                newest[row.series] = row
        for series, row in newest.items():
            out[series].append((run, row.quantiles()[1], row.get("liger_version")))
    return out


def segment_medians(values: list[float], indices: list[int]) -> list[tuple[float, float]]:
    """(median before, median after) of each change point, segments bounded by its neighbours."""
    bounds = [0, *indices, len(values)]
    return [
        (statistics.median(values[bounds[i] : bounds[i + 1]]), statistics.median(values[bounds[i + 1] : bounds[i + 2]]))
        for i in range(len(indices))
    ]
