"""A small upstream mirror written from scratch, in the layout of ../shared/upstream/liger-kernel.

For cases the real mirror lacks: pre-release versions, a release run of a pre-release, a
main-branch row that a later commit re-measures, and run histories whose verdicts can be
worked out by hand.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

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
GPU = "NVIDIA H100 80GB HBM3"
CONFIG = '{"B": 8, "T": 2048}'
UNITS = {"speed": "ms", "memory": "MB"}


def row(
    provider: str,
    p50: float,
    version: str,
    stamp: str,
    kernel: str = "rms_norm",
    *,
    hidden: int = 4096,
    metric: str = "speed",
) -> list[str]:
    """One ``metric`` row of ``kernel`` at H=``hidden`` with a tight band around ``p50``."""
    band = (p50 * 0.99, p50 * 1.01)
    return [kernel, provider, "forward", metric, UNITS[metric], "H", "hidden size", str(hidden),
            repr(p50), repr(band[0]), repr(band[1]), CONFIG, GPU, stamp, version]  # fmt: skip


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    return gzip.compress(out.getvalue().encode())


def write_mirror(root: Path, commits: list[list[list[str]]], runs: dict[str, list[list[str]]]) -> Path:
    """``commits``: the rows of all_benchmark_data.csv per commit, oldest first; ``runs``: the
    rows of each gh-pages run, in run order."""
    listing = []
    for index, rows in enumerate(commits):
        sha = f"{index + 1:040x}"
        target = root / "raw" / sha / "benchmark" / "data" / "all_benchmark_data.csv.gz"
        target.parent.mkdir(parents=True)
        target.write_bytes(_csv(rows))
        when = f"2026-01-{index + 1:02d}T00:00:00Z"
        person = {"name": "tester", "date": when}
        listing.append({"sha": sha, "commit": {"author": person, "committer": person, "message": f"commit {index}"}})
    (root / "commits").mkdir(parents=True)
    (root / "commits" / "all_benchmark_data.json").write_text(json.dumps(list(reversed(listing))))
    pages = root / "gh-pages" / "benchmarks"
    for run, rows in runs.items():
        (pages / run).mkdir(parents=True)
        (pages / run / "benchmark.csv.gz").write_bytes(_csv(rows))
    pages.mkdir(parents=True, exist_ok=True)  # a mirror may have no run yet
    (pages / "commits.txt").write_text("".join(f"{run}\n" for run in runs))
    return root
