"""Derive ``benchmarks/synthetic/suite.json`` from an upstream mirror (run once, output committed).

The suite is the shape of upstream's benchmark matrix, not its measurements: every sweep
(kernel, x axis, config, x values), the provider/mode/metric series run over it with a typical
magnitude and slope, the GPUs with their share of rows and the Liger versions in release order.
The synthetic generator draws from it, so synthetic mirrors have upstream's cardinalities.

    python -m benchmarks.derive_suite ../shared/upstream/liger-kernel > benchmarks/synthetic/suite.json
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from liger_warehouse.model.versions import version_sort_key

GH_PAGES = "gh-pages"


def _rows(path: Path) -> list[list[str]]:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    return [r for r in csv.reader(io.StringIO(text, newline="")) if r][1:]


def _files(mirror: Path):
    for path in sorted(mirror.glob("raw/*/benchmark/data/*.csv.gz")):
        yield path.name.removesuffix(".csv.gz"), path
    for path in sorted(mirror.glob("gh-pages/benchmarks/*/benchmark.csv.gz")):
        yield GH_PAGES, path


def _x_number(text: str, index: int) -> float:
    try:
        return max(float(text), 1e-9)
    except ValueError:
        return float(index + 1)  # named x values (model configs) count as positions


def _series(points: dict[str, list[tuple[float, float, float]]], x_values: list[str]) -> dict:
    """Typical p50 at the first and last x, and the typical relative p20/p80 spread."""
    medians = {x: statistics.median(p[0] for p in points[x]) for x in points}
    xs = [x for x in x_values if x in medians]
    first, last = xs[0], xs[-1]
    n_first, n_last = _x_number(first, x_values.index(first)), _x_number(last, x_values.index(last))
    slope = 0.0
    if n_last != n_first and medians[first] > 0 and medians[last] > 0:
        slope = math.log(medians[last] / medians[first]) / math.log(n_last / n_first)
    spreads = [(p50 - p20) / p50 for pts in points.values() for p50, p20, _ in pts if p50 > 0]
    spreads_hi = [(p80 - p50) / p50 for pts in points.values() for p50, _, p80 in pts if p50 > 0]
    equal = sum(1 for pts in points.values() for p in pts if p[0] == p[1] == p[2])
    total = sum(len(pts) for pts in points.values())
    p50_at_first = medians[first] / (n_first / _x_number(x_values[0], 0)) ** slope
    return {
        "p50": float(f"{p50_at_first:.6g}"),
        "slope": round(slope, 4),
        "spread_lo": round(statistics.median(spreads), 5) if spreads else 0.0,
        "spread_hi": round(statistics.median(spreads_hi), 5) if spreads_hi else 0.0,
        "equal_quantiles": round(equal / total, 3),
    }


def derive(mirror: Path) -> dict:
    sweeps: dict[tuple, dict] = {}
    gpus: Counter = Counter()
    versions: set[str] = set()
    for stem, path in _files(mirror):
        for r in _rows(path):
            key = (r[0], r[5], r[6], r[11])
            sweep = sweeps.setdefault(key, {"x": [], "stems": set(), "series": defaultdict(dict)})
            if r[7] not in sweep["x"]:
                sweep["x"].append(r[7])
            sweep["stems"].add(stem)
            points = sweep["series"][(r[1], r[2], r[3], r[4])].setdefault(r[7], [])
            points.append((float(r[8]), float(r[9]), float(r[10])))
            gpus[r[12]] += 1
            versions.add(r[14])
    out = []
    for (kernel, x_name, x_label, config), sweep in sorted(sweeps.items()):
        x_values = sorted(sweep["x"], key=lambda x: (_x_number(x, sweep["x"].index(x)), x))
        series = [
            {"provider": p, "mode": m, "metric": k, "unit": u, **_series(points, x_values)}
            for (p, m, k, u), points in sorted(sweep["series"].items())
        ]
        out.append(
            {
                "kernel": kernel,
                "x_name": x_name,
                "x_label": x_label,
                "config": config,
                "x_values": x_values,
                "stems": sorted(sweep["stems"]),
                "series": series,
            }
        )
    return {
        "_comment": "Derived by benchmarks/derive_suite.py from the upstream mirror: the shape of "
        "upstream's benchmark matrix (sweeps, series, typical magnitudes), no measurements.",
        "gpus": dict(gpus.most_common()),
        "versions": sorted(versions, key=version_sort_key),
        "sweeps": out,
    }


if __name__ == "__main__":
    json.dump(derive(Path(sys.argv[1])), sys.stdout, indent=1)
    sys.stdout.write("\n")
