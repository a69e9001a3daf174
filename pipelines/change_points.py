"""Change points in the gh-pages run history of every series, by Apache Otava's e-divisive.

A series (kernel, mode, provider, metric, GPU, workload) gets one point per gh-pages run, in
run order (``dim_upstream_revision.seq``, the order of upstream's ``commits.txt``); the point
is that run's p50, and when a run holds several results of the series the most recently
observed one stands for it. Main-branch results are left out: a main-branch CSV is overwritten
piecemeal on whatever host re-ran a kernel, so its revisions are not a time series.

Detection is Apache Otava's ``compute_change_points`` (Fleming et al., "Hunter: Using Change
Point Detection to Hunt for Performance Regressions", ICPE 2023): e-divisive means (Matteson
& James 2014) proposes splits in sliding windows, then a merge step keeps only the change
points whose two-sided t-test p-value is below ``MAX_PVALUE`` and whose relative change in
mean exceeds ``MIN_MAGNITUDE``. Otava's own defaults are window 50 and p-value 0.001; the
5% magnitude floor matches the default regression threshold of the SQL views, so a level
shift smaller than what ``regressions`` would call a change is not reported either.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from importlib.metadata import version

import polars as pl
import pyarrow as pa
from otava.analysis import compute_change_points

from pipelines.store.generations import Generation, GenerationStore, Part
from pipelines.tables import SCHEMAS

GH_PAGES = "gh-pages"
WINDOW = 50
MAX_PVALUE = 0.001
MIN_MAGNITUDE = 0.05
# Fewer points than this and a t-test over the two sides says little.
MIN_POINTS = 10


@dataclass(frozen=True)
class Detected:
    """One change point: ``index`` is the first point after the shift."""

    index: int
    pvalue: float
    before: tuple[float, ...]
    after: tuple[float, ...]


def method() -> str:
    """What produced the table, stored with every row so a reader can tell runs apart."""
    return (
        f"apache-otava {version('apache-otava')} e-divisive: window={WINDOW} "
        f"max_pvalue={MAX_PVALUE} min_magnitude={MIN_MAGNITUDE} min_points={MIN_POINTS}"
    )


def run_points(results: pl.DataFrame, revisions: pl.DataFrame) -> pl.DataFrame:
    """One point per series and gh-pages run, in run order.

    ``results`` has fact_result's series_digest, source, first_revision_digest, observed_at,
    result_digest and p50; ``revisions`` has dim_upstream_revision's revision_digest and seq.
    """
    runs = revisions.select("revision_digest", "seq")
    return (
        results.filter(pl.col("source") == GH_PAGES)
        .join(runs, left_on="first_revision_digest", right_on="revision_digest")
        .rename({"first_revision_digest": "revision_digest"})
        # The most recently observed result of a run stands for it; the digest breaks ties.
        .sort(["series_digest", "seq", "observed_at", "result_digest"], descending=[False, False, True, False])
        .unique(["series_digest", "seq"], keep="first", maintain_order=True)
        .select("series_digest", "seq", "revision_digest", "p50")
    )


def detect(values: list[float]) -> list[Detected]:
    """Change points of one series; segments run from one change point to the next."""
    if len(values) < MIN_POINTS:
        return []
    found, _weak = compute_change_points(values, window_len=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE)
    bounds = [0, *(int(cp.index) for cp in found), len(values)]
    return [
        Detected(
            index=int(cp.index),
            pvalue=float(cp.stats.pvalue),
            before=tuple(values[bounds[i] : bounds[i + 1]]),
            after=tuple(values[bounds[i + 1] : bounds[i + 2]]),
        )
        for i, cp in enumerate(found)
    ]


def change_point_table(points: pl.DataFrame) -> pa.Table:
    """``fact_change_point`` rows for every series in ``points`` (from ``run_points``)."""
    label = method()
    rows = []
    for (series,), unsorted in points.group_by("series_digest", maintain_order=True):
        group = unsorted.sort("seq")
        values = group["p50"].to_list()
        revisions = group["revision_digest"].to_list()
        for cp in detect(values):
            rows.append(_row(series, cp, revisions, len(values), label))
    return pa.Table.from_pylist(rows, schema=SCHEMAS["fact_change_point"])


def _row(series: str, cp: Detected, revisions: list[str], points: int, label: str) -> dict:
    return {
        "series_digest": series,
        "revision_digest": revisions[cp.index],
        "previous_revision_digest": revisions[cp.index - 1],
        "point_index": cp.index,
        "points": points,
        "before_points": len(cp.before),
        "after_points": len(cp.after),
        "before_median": statistics.median(cp.before),
        "after_median": statistics.median(cp.after),
        "pvalue": cp.pvalue,
        "method": label,
    }


def compute(results: pl.DataFrame, revisions: pl.DataFrame) -> pa.Table:
    """The whole ``fact_change_point`` table of one generation."""
    return change_point_table(run_points(results, revisions))


TABLE = "fact_change_point"
_INPUTS = ["series_digest", "source", "first_revision_digest", "observed_at", "result_digest", "p50"]


def _content_name(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()[:32]


def add_to_generation(gens: GenerationStore, gen: Generation) -> Part:
    """Compute the change points of staged generation ``gen`` and re-stage it with them.

    The part is named by its content, so a refresh that changes no gh-pages run writes no
    new file and the new generation references the same part as the last one.
    """
    results = pl.from_arrow(gens.read_table(gen, "fact_result", _INPUTS))
    revisions = pl.from_arrow(gens.read_table(gen, "dim_upstream_revision", ["revision_digest", "seq"]))
    table = compute(results, revisions)
    name = _content_name(table)
    file = f"tables/{TABLE}/{name}.parquet"
    if gens.storage.exists(file):
        part = Part(key="all", file=file, rows=table.num_rows)
    else:
        part = gens.write_part(TABLE, "all", name, table)
    gen.tables[TABLE] = [part]
    gens.stage(gen)
    return part
