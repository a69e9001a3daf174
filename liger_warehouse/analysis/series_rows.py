"""The rows of ``fact_change_point`` and ``change_point_state`` for a batch of series: what one
worker of ``series_pool.py`` does (or the streaming process itself, with one worker).

Each series is analysed by ``otava_split.analyze``, resumed from its prior state row when it
has one; a change point's row carries the medians of the segments on either side of it.
"""

from __future__ import annotations

import statistics

import pyarrow as pa

from liger_warehouse.analysis.otava_method import method
from liger_warehouse.analysis.otava_split import SeriesState, analyze
from liger_warehouse.analysis.point_stream import STATE, TABLE, Series
from liger_warehouse.analysis.series_batch import Analyzed, Batch, Counts
from liger_warehouse.model.tables import SCHEMAS


def change_point_rows(s: Series, state: SeriesState, revisions: list[str], label: str) -> list[dict]:
    """The ``fact_change_point`` rows of series ``s``: one per change point of ``state``."""
    values = s.values.tolist()
    bounds = [0, *(i for i, _ in state.found), len(values)]
    rows = []
    for n, (index, pvalue) in enumerate(state.found):
        before = values[bounds[n] : bounds[n + 1]]
        after = values[bounds[n + 1] : bounds[n + 2]]
        rows.append(
            {
                "series_digest": s.digest,
                "revision_digest": revisions[s.rids[index]],
                "previous_revision_digest": revisions[s.rids[index - 1]],
                "point_index": index,
                "points": len(values),
                "before_points": len(before),
                "after_points": len(after),
                "before_median": statistics.median(before),
                "after_median": statistics.median(after),
                "pvalue": pvalue,
                "method": label,
            }
        )
    return rows


def analyze_batch(batch: Batch, revisions: list[str]) -> Analyzed:
    """Both tables' rows of ``batch`` (each series with its prior ``change_point_state`` row,
    or None), as Arrow tables; ``revisions`` maps a point's run id to its revision digest."""
    label = method()
    counts = Counts()
    found, states = [], []
    for s, prior in batch:
        state, how = analyze(s.seqs, s.values, None if prior is None else SeriesState.from_row(prior))
        counts.add(how, len(s.values))
        found += change_point_rows(s, state, revisions, label)
        states.append(state.to_row(s.digest, label))
    return Analyzed(
        {
            TABLE: pa.Table.from_pylist(found, schema=SCHEMAS[TABLE]),
            STATE: pa.Table.from_pylist(states, schema=SCHEMAS[STATE]),
        },
        counts,
    )
