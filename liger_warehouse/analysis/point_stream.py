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


def series_of(batches: Iterable[pa.RecordBatch]) -> Iterator[Series]:
    """One series at a time, one point per run, from batches of ``points_sql``."""
    key, pending = None, []

    def flush() -> Series:
        seqs = np.concatenate([p[0] for p in pending])
        # The first row of a run stands for it (the order of points_sql).
        first = np.empty(len(seqs), dtype=bool)
        first[0] = True
        np.not_equal(seqs[1:], seqs[:-1], out=first[1:])
        return Series(
            key,
            seqs[first],
            np.concatenate([p[1] for p in pending])[first],
            np.concatenate([p[2] for p in pending])[first],
        )

    for batch in batches:
        if batch.num_rows == 0:
            continue
        runs = pc.run_end_encode(batch.column("series_digest"))
        ends = runs.run_ends.to_numpy()
        digests = runs.values.to_pylist()
        hashes = batch.column("h").to_numpy()
        seqs = batch.column("seq").to_numpy().astype(np.int64)
        values = batch.column("p50").to_numpy(zero_copy_only=False).astype(np.float64)
        rids = batch.column("rid").to_numpy()
        begin = 0
        for digest, end in zip(digests, ends, strict=True):
            k = (int(hashes[begin]), digest)
            if k != key and pending:
                yield flush()
                pending = []
            key = k
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
