"""An independent recount of the upstream mirror in plain Python (csv + gzip, nothing from the project)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

STEMS = ("all_benchmark_data", "all_benchmark_data_cutedsl", "all_benchmark_data_cutile")


def rows_of(path: Path) -> list[tuple[str, ...]]:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    rows = [tuple(r) for r in csv.reader(io.StringIO(text, newline="")) if r]
    return rows[1:]


@dataclass
class Recount:
    results: set[tuple] = field(default_factory=set)
    current: set[tuple] = field(default_factory=set)
    per_source: Counter = field(default_factory=Counter)
    rows: int = 0
    revisions: int = 0


def recount(mirror: Path) -> Recount:
    """Results are distinct rows per source; current ones are in the newest commit or a listed run."""
    out = Recount()
    for stem in STEMS:
        source = f"benchmark/data/{stem}.csv"
        commits = json.loads((mirror / "commits" / f"{stem}.json").read_text())
        for i, commit in enumerate(commits):
            rows = rows_of(mirror / "raw" / commit["sha"] / "benchmark" / "data" / f"{stem}.csv.gz")
            out.rows += len(rows)
            out.revisions += 1
            keyed = {(source, r) for r in rows}
            out.results |= keyed
            if i == 0:
                out.current |= keyed
    runs = (mirror / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()
    for run in runs:
        rows = rows_of(mirror / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz")
        out.rows += len(rows)
        out.revisions += 1
        keyed = {(run, r) for r in rows}
        out.results |= keyed
        out.current |= keyed
    out.per_source = Counter(source for source, _ in out.results)
    return out
