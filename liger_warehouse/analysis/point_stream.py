"""The points of every series, streamed: gh-pages results as (series, run, p50) in series order
from DuckDB, and the prior ``change_point_state`` rows in the same order, merge-joined one series
at a time (liger_warehouse/analysis/change_points.py).

Both streams are ordered by (hash(series_digest), series_digest): digests share a long
prefix ("sha256:"), and a hash first makes DuckDB's sort about twice as fast. The order is
only used within one run, to merge-join the points with the prior state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from liger_warehouse.analysis.otava_method import method
from liger_warehouse.model.revisions import GH_PAGES
from liger_warehouse.model.tables import SCHEMAS

TABLE = "fact_change_point"
STATE = "change_point_state"


def quote(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def points_sql(results: str) -> str:
    """Every gh-pages result as (series, run), ordered so that the first row of each series
    and run is the one that stands for the run: most recently observed, then smallest digest.
    ``results`` is a relation with fact_result's columns; ``cp_runs`` (rid, revision_digest,
    seq) the revisions. The sort carries the revision's row id instead of its digest."""
    return f"""
        select hash(r.series_digest) as h, r.series_digest, d.seq, d.rid, r.p50
        from {results} as r
        join cp_runs as d on d.revision_digest = r.first_revision_digest
        where r.source = '{GH_PAGES}'
        order by h, r.series_digest, d.seq, r.observed_at desc, r.result_digest
    """


def state_sql(state: str) -> str:
    return f"""
        select hash(series_digest) as h, *
        from {state}
        where method = {quote(method())}
        order by h, series_digest
    """


def layout(schema: pa.Schema) -> list:
    def names(t: pa.DataType) -> list:
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return names(t.value_type)
        return [(f.name, names(f.type)) for f in t] if pa.types.is_struct(t) else []

    return [(f.name, names(f.type)) for f in schema]


def same_layout(schema: pa.Schema) -> bool:
    """Whether a prior state has this code's columns and fields; a state written in another
    layout is not read (every series is then computed from scratch)."""
    return layout(schema) == layout(SCHEMAS[STATE])


def run_table(revisions: pa.Table) -> pa.Table:
    """The revisions with a row id, so the sort carries an integer instead of a digest."""
    revisions = revisions.select(["revision_digest", "seq"])
    return revisions.append_column("rid", pa.array(np.arange(revisions.num_rows, dtype=np.int32)))


@dataclass
class Series:
    key: tuple[int, str]
    seqs: np.ndarray
    values: np.ndarray
    rids: np.ndarray

    @property
    def digest(self) -> str:
        return self.key[1]


def _standing(seqs: np.ndarray, starts: np.ndarray, continued: int | None) -> np.ndarray:
    """Which rows of a batch stand for their run: the first of each series and run (the order of
    points_sql). ``starts`` are the rows where a series starts; ``continued`` is the last run of
    the series that the batch's first row continues (None: it starts a series)."""
    first = np.ones(len(seqs), dtype=bool)
    np.not_equal(seqs[1:], seqs[:-1], out=first[1:])
    first[starts] = True
    first[0] = continued is None or seqs[0] != continued
    return np.flatnonzero(first)


def series_of(batches: Iterable[pa.RecordBatch]) -> Iterator[Series]:
    """One series at a time, one point per run, from batches of ``points_sql``."""
    key, pending = None, []

    def flush() -> Series:
        parts = [np.concatenate(column) if len(column) > 1 else column[0] for column in zip(*pending, strict=True)]
        return Series(key, *parts)

    for batch in batches:
        if batch.num_rows == 0:
            continue
        runs = pc.run_end_encode(batch.column("series_digest"))
        ends = runs.run_ends.to_numpy()
        starts = np.concatenate([[0], ends[:-1]])
        keys = list(zip(batch.column("h").to_numpy()[starts].tolist(), runs.values.to_pylist(), strict=True))
        seqs = batch.column("seq").to_numpy().astype(np.int64)
        keep = _standing(seqs, starts, int(pending[-1][0][-1]) if pending and keys[0] == key else None)
        seqs = seqs[keep]
        values = batch.column("p50").to_numpy(zero_copy_only=False).astype(np.float64)[keep]
        rids = batch.column("rid").to_numpy()[keep]
        begin = 0
        for k, end in zip(keys, np.searchsorted(keep, ends), strict=True):
            if k != key and pending:
                yield flush()
                pending = []
            key = k
            if end > begin:  # empty when the batch only repeats the run its series ended with
                pending.append((seqs[begin:end], values[begin:end], rids[begin:end]))
            begin = end
    if pending:
        yield flush()


def prior_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[tuple[int, str], dict]]:
    """The prior ``change_point_state`` rows of ``state_sql``, each with its series' sort key
    (decoded where the series is analysed: ``SeriesState.from_row``)."""
    for batch in batches:
        for row in batch.to_pylist():
            yield (row["h"], row["series_digest"]), row


class Join:
    """Merge-join of the series stream with the prior state, both in the same order."""

    def __init__(self, states: Iterator[tuple[tuple[int, str], dict]]) -> None:
        self._states = states
        self._next = next(self._states, None)

    def get(self, key: tuple[int, str]) -> dict | None:
        while self._next is not None and self._next[0] < key:
            self._next = next(self._states, None)
        if self._next is not None and self._next[0] == key:
            return self._next[1]
        return None
