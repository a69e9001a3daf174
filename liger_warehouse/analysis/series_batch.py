"""Batches of series, the unit of work of ``series_pool.py``, and what analysing one gives
(``series_rows.py``): rows of both change point tables and counts of how each series was computed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields

import pyarrow as pa

from liger_warehouse.analysis.point_stream import Join, Series

# Points per batch: enough to outweigh the cost of sending a batch, few enough to share the
# series of the real history (about 65,000 points) among the workers evenly.
BATCH_POINTS = 4096

Batch = list[tuple[Series, dict | None]]


@dataclass
class Counts:
    series: int = 0
    resumed: int = 0
    unchanged: int = 0
    from_scratch: int = 0
    points: int = 0

    def add(self, how: str, points: int) -> None:
        """One more series of ``points`` points, computed ``how`` (a field's name)."""
        self.series += 1
        self.points += points
        setattr(self, how, getattr(self, how) + 1)

    def merge(self, other: Counts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class Analyzed:
    """What a batch gives: rows of fact_change_point and change_point_state, and its counts."""

    tables: dict[str, pa.Table]
    counts: Counts = field(default_factory=Counts)


def batches(series: Iterable[Series], prior: Join, points: int = BATCH_POINTS) -> Iterator[Batch]:
    """The series, each with its prior state row (or None), in batches of about ``points``."""
    batch, size = [], 0
    for s in series:
        batch.append((s, prior.get(s.key)))
        size += len(s.values)
        if size >= points:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
