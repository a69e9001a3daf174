"""Change points in the gh-pages run history of every series, by Apache Otava's e-divisive.

A series (kernel, mode, provider, metric, GPU, workload) gets one point per gh-pages run, in
run order (``dim_upstream_revision.seq``, the order of upstream's ``commits.txt``); the point
is that run's p50, and when a run holds several results of the series the most recently
observed one stands for it (the smallest result digest breaks ties). Main-branch results are
left out: a main-branch CSV is overwritten piecemeal on whatever host re-ran a kernel, so its
revisions are not a time series.

Detection is Apache Otava's ``compute_change_points`` (Fleming et al., "Hunter: Using Change
Point Detection to Hunt for Performance Regressions", ICPE 2023): e-divisive means (Matteson
& James 2014) proposes splits in sliding windows, then a merge step keeps only the change
points whose two-sided t-test p-value is below ``MAX_PVALUE`` and whose relative change in
mean exceeds ``MIN_MAGNITUDE``. Otava's own defaults are window 50 and p-value 0.001; the
5% magnitude floor matches the default regression threshold of the SQL views, so a level
shift smaller than what ``regressions`` would call a change is not reported either.

Incremental refresh
-------------------
Otava's split step walks the series with windows of ``WINDOW`` points: a window starts at
``start``, its weak change points are found in ``series[start:start + WINDOW]`` alone, and the
next window starts at ``max(last change point found, start + WINDOW // 2)``. A window that
ends inside the old points (a *complete* window) sees the same values after points are
appended, so it finds the same weak change points and hands the same start to the next one.
``change_point_state`` keeps, per series, the weak change points of the complete windows and
the start of the first incomplete window (``resume_index``); a refresh runs the windows from
there on, then Otava's final t-tests and ``merge`` over the whole series, exactly as
``compute_change_points`` does. The result is therefore identical to a computation from
scratch (same indices, same p-values, bit for bit): ``tests/test_change_points.py`` checks it
on appended steps, drifts, spikes and noise, and on the 1,000-run benchmark history one
appended run gave byte-identical ``fact_change_point`` and ``change_point_state`` parts
resumed and from scratch. The window loop (``_windows``) is Otava 0.8.0's ``split`` loop,
written out so it can stop and resume; the tests compare it with ``compute_change_points``
itself, so an Otava upgrade that changes the algorithm fails them rather than drifting.

This is not ``compute_change_points(new_data=..., old_weak_cp=...)``, Otava's own incremental
mode, because that mode does not reproduce a computation from scratch. Measured with Otava
0.8.0, one run appended to a series analysed from scratch: on the 1,000-run benchmark history
52 of 275 sampled series (1 in 20 of those with at least 60 runs) get other change points than
from scratch; on the synthetic series of the tests, 110 of 750 appends to a drift and 3 of 750
to spikes differ, none to noise or steps (a test pins one drift case). Two reasons: it
restarts the windows on its own grid, at the last multiple of ``WINDOW // 2`` (or the last old
change point) before ``(new_data / WINDOW + 4) * WINDOW`` points from the end, which is not
where the windows of a full run fall; and the weak change points it is handed back are the
*merged* list (``compute_change_points`` returns the list ``merge`` pruned in place), so a weak
change point before the restart that the old merge removed never comes back, though a merge
over the longer series might keep it. Resuming the window chain also costs less than Otava's
mode: about two windows per appended run instead of nine.

A series resumes when its state was written by the same ``method()`` and its first
``points`` points (seq and p50) are those the state was computed from (``prefix_digest``); a
series with new points is thus resumed from its state, and a series whose history changed
(a run restated, removed or inserted before the last one analyzed), a new series, or any
series after a change of ``method()`` is computed from scratch. A series with no new point
reuses its stored change points without running Otava at all.

Cost: the points are computed by DuckDB over the generation's Parquet parts with a memory
limit (``MEMORY_LIMIT``) and a local spill directory, streamed in Arrow batches ordered by
series, and analysed one series at a time; the prior state is merge-joined from a second
ordered stream. Memory holds DuckDB's buffers, one series and the output (a row per change
point and per series), never the history. What stays proportional to the history is the
scan and sort of the gh-pages results, the digest of every point, Otava's final t-tests and
merge over every weak change point of a resumed series (both need the whole series), and
the segment medians around its change points.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from otava.analysis import TTestSignificanceTester, TTestStats, merge
from otava.change_point_divisive.base import CandidateChangePoint, ChangePoint
from otava.change_point_divisive.calculator import PairDistanceCalculator
from otava.change_point_divisive.detector import ChangePointDetector

from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.store.generations import Generation, GenerationStore, Part

GH_PAGES = "gh-pages"
WINDOW = 50
MAX_PVALUE = 0.001
MIN_MAGNITUDE = 0.05
# Fewer points than this and a t-test over the two sides says little.
MIN_POINTS = 10
# Otava's split step looks for weak change points at a relaxed p-value, as compute_change_points.
FIRST_PASS_PVALUE = MAX_PVALUE * 10 if MAX_PVALUE < 0.05 else (MAX_PVALUE * 2 if MAX_PVALUE < 0.5 else MAX_PVALUE)
STEP = int(WINDOW / 2)

TABLE = "fact_change_point"
STATE = "change_point_state"
# DuckDB computes the points; past this much memory its sort spills to a local directory.
MEMORY_LIMIT = "512MB"
BATCH_ROWS = 65_536
# Output rows held as Python objects before they become Arrow (a state row holds its weak points).
_FLUSH_ROWS = 10_000
_POINT = np.dtype([("seq", "<i8"), ("p50", "<f8")])


def method() -> str:
    """What produced the table, stored with every row so a reader can tell runs apart."""
    return (
        f"apache-otava {version('apache-otava')} e-divisive: window={WINDOW} "
        f"max_pvalue={MAX_PVALUE} min_magnitude={MIN_MAGNITUDE} min_points={MIN_POINTS}"
    )


@dataclass
class Weak:
    """A weak change point of a complete window, with the t-test of Otava's final pass over
    the segments between its neighbours ``left`` and ``right`` (-1: the end of the series)."""

    index: int
    qhat: float
    left: int
    right: int
    stats: TTestStats

    def reusable(self, left: int, right: int) -> bool:
        """Its t-test holds while its neighbours are the same and the right one is not the
        end of the series (which moves with every appended point)."""
        return self.right != -1 and (self.left, self.right) == (left, right)


@dataclass
class SeriesState:
    """What a later refresh needs to resume one series (a row of ``change_point_state``)."""

    points: int
    last_seq: int
    prefix_digest: str
    resume_index: int
    weak: list[Weak]  # the weak change points of the complete windows, by index
    found: list[tuple[int, float]]  # (index, pvalue) of the change points reported


@dataclass
class Counts:
    series: int = 0
    resumed: int = 0
    unchanged: int = 0
    from_scratch: int = 0
    points: int = 0

    def as_metadata(self) -> dict[str, int]:
        return {
            "series": self.series,
            "series_resumed": self.resumed,
            "series_unchanged": self.unchanged,
            "series_from_scratch": self.from_scratch,
            "points": self.points,
        }


# --- Otava's split step, resumable -------------------------------------------------------


def _windows(
    values: list[float], start: int, settled: dict[int, CandidateChangePoint]
) -> tuple[list[CandidateChangePoint], int, dict[int, CandidateChangePoint]]:
    """Otava's sliding windows (``otava.analysis.split``) from ``start`` to the end.

    ``settled`` holds the weak change points of the complete windows before ``start``.
    Returns every weak change point, sorted by index, the start of the first incomplete window
    and the weak change points of all complete windows (the state a later call resumes from).
    """
    n = len(values)
    tester = TTestSignificanceTester(FIRST_PASS_PVALUE)
    found = dict(settled)
    settled = dict(settled)
    resume = None
    while start < n:
        end = min(start + WINDOW, n)
        if resume is None and start + WINDOW > n:
            resume = start
        detector = ChangePointDetector(significance_tester=tester, calculator=PairDistanceCalculator)
        # A list, not an array: Otava's detector slices [start:end] only out of a sequence.
        new = detector.get_change_points(values, start, end)
        for cp in new:
            candidate = CandidateChangePoint(index=int(cp.index), qhat=float(cp.qhat))
            # Like split(): a change point found again by a later window keeps its first finding.
            found.setdefault(candidate.index, candidate)
            if resume is None:
                settled.setdefault(candidate.index, candidate)
        start = max(int(new[-1].index) if new else 0, start + STEP)
    ordered = [found[i] for i in sorted(found)]
    return ordered, (start if resume is None else resume), settled


def _change_points(
    values: np.ndarray, weak: list[CandidateChangePoint], settled: set[int], known: dict[int, Weak]
) -> tuple[list[tuple[int, float]], list[Weak]]:
    """Otava's final pass over the weak change points (the t-tests of ``split``), then its
    ``merge``. A t-test in ``known`` whose segments did not change is taken as it is: the same
    values give the same floats. Returns the (index, pvalue) of the change points and the
    ``settled`` weak change points with their t-tests."""
    tester = TTestSignificanceTester(FIRST_PASS_PVALUE)
    intervals = tester.get_intervals(weak)
    tested, keep = [], []
    for i, cp in enumerate(weak):
        left = weak[i - 1].index if i else 0
        right = weak[i + 1].index if i + 1 < len(weak) else -1
        old = known.get(cp.index)
        if old is not None and old.reusable(left, right):
            point = ChangePoint.from_candidate(cp, old.stats)
        else:
            point = tester.change_point(cp, values, intervals)
        tested.append(point)
        if cp.index in settled:
            stats = point.stats
            keep.append(
                Weak(
                    cp.index,
                    cp.qhat,
                    left,
                    right,
                    TTestStats(
                        mean_1=float(stats.mean_1),
                        mean_2=float(stats.mean_2),
                        std_1=float(stats.std_1),
                        std_2=float(stats.std_2),
                        pvalue=float(stats.pvalue),
                    ),
                )
            )
    # merge() prunes and rewrites the list it is given: a copy keeps ``tested`` as it was.
    found = merge(list(tested), values, MAX_PVALUE, MIN_MAGNITUDE)
    return [(int(cp.index), float(cp.stats.pvalue)) for cp in found], keep


def analyze(seqs: np.ndarray, values: np.ndarray, prior: SeriesState | None = None) -> tuple[SeriesState, str]:
    """Change points of one series (its points in run order), resumed from ``prior`` when its
    first points are those ``prior`` was computed from. Returns the new state and how it was
    computed: "resumed", "unchanged" or "from_scratch"."""
    points = np.empty(len(values), dtype=_POINT)
    points["seq"] = seqs
    points["p50"] = values
    digest = hashlib.sha256()
    usable = False
    if prior is not None and prior.points <= len(points):
        digest.update(points[: prior.points].tobytes())
        usable = digest.hexdigest()[:32] == prior.prefix_digest
        digest.update(points[prior.points :].tobytes())
    else:
        digest.update(points.tobytes())
    state = SeriesState(
        points=len(points),
        last_seq=int(seqs[-1]),
        prefix_digest=digest.hexdigest()[:32],
        resume_index=0,
        weak=[],
        found=[],
    )
    if usable and prior.points == len(points):
        return prior, "unchanged"
    if len(points) < MIN_POINTS:
        return state, "resumed" if usable else "from_scratch"
    start, settled, known = 0, {}, {}
    if usable:
        start = prior.resume_index
        settled = {w.index: CandidateChangePoint(index=w.index, qhat=w.qhat) for w in prior.weak}
        known = {w.index: w for w in prior.weak}
    weak, state.resume_index, settled = _windows(values.tolist(), start, settled)
    # An array here: the same floats as from a list, without converting a slice per t-test.
    state.found, state.weak = _change_points(values, weak, set(settled), known)
    return state, "resumed" if usable else "from_scratch"


def detect(values: list[float]) -> list[tuple[int, float]]:
    """(index, pvalue) of the change points of one series, from scratch."""
    state, _ = analyze(np.arange(1, len(values) + 1), np.asarray(values, dtype=np.float64))
    return state.found


# --- Streaming the points ------------------------------------------------------------------
#
# Both streams are ordered by (hash(series_digest), series_digest): digests share a long
# prefix ("sha256:"), and a hash first makes DuckDB's sort about twice as fast. The order is
# only used within one run, to merge-join the points with the prior state.


def _points_sql(results: str) -> str:
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


def _state_sql(state: str) -> str:
    return f"""
        select hash(series_digest) as h, *
        from {state}
        where method = {_quote(method())}
        order by h, series_digest
    """


def _layout(schema: pa.Schema) -> list:
    def names(t: pa.DataType) -> list:
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return names(t.value_type)
        return [(f.name, names(f.type)) for f in t] if pa.types.is_struct(t) else []

    return [(f.name, names(f.type)) for f in schema]


def _same_layout(schema: pa.Schema) -> bool:
    """Whether a prior state has this code's columns and fields; a state written in another
    layout is not read (every series is then computed from scratch)."""
    return _layout(schema) == _layout(SCHEMAS[STATE])


def _runs(revisions: pa.Table) -> pa.Table:
    """The revisions with a row id, so the sort carries an integer instead of a digest."""
    revisions = revisions.select(["revision_digest", "seq"])
    return revisions.append_column("rid", pa.array(np.arange(revisions.num_rows, dtype=np.int32)))


@dataclass
class _Series:
    key: tuple[int, str]
    seqs: np.ndarray
    values: np.ndarray
    rids: np.ndarray

    @property
    def digest(self) -> str:
        return self.key[1]


def _series(batches: Iterable[pa.RecordBatch]) -> Iterator[_Series]:
    """One series at a time, one point per run, from batches of ``_points_sql``."""
    key, pending = None, []

    def flush() -> _Series:
        seqs = np.concatenate([p[0] for p in pending])
        # The first row of a run stands for it (the order of _points_sql).
        first = np.empty(len(seqs), dtype=bool)
        first[0] = True
        np.not_equal(seqs[1:], seqs[:-1], out=first[1:])
        return _Series(
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


def _states(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[tuple[int, str], SeriesState]]:
    for batch in batches:
        for row in batch.to_pylist():
            yield (
                (row["h"], row["series_digest"]),
                SeriesState(
                    points=row["points"],
                    last_seq=row["last_seq"],
                    prefix_digest=row["prefix_digest"],
                    resume_index=row["resume_index"],
                    weak=[
                        Weak(
                            w["index"],
                            w["qhat"],
                            w["left"],
                            w["right"],
                            TTestStats(
                                mean_1=w["mean_1"],
                                mean_2=w["mean_2"],
                                std_1=w["std_1"],
                                std_2=w["std_2"],
                                pvalue=w["pvalue"],
                            ),
                        )
                        for w in row["weak_change_points"]
                    ],
                    found=[(c["index"], c["pvalue"]) for c in row["change_points"]],
                ),
            )


class _Join:
    """Merge-join of the series stream with the prior state, both in the same order."""

    def __init__(self, states: Iterator[tuple[tuple[int, str], SeriesState]]) -> None:
        self._states = states
        self._next = next(self._states, None)

    def get(self, key: tuple[int, str]) -> SeriesState | None:
        while self._next is not None and self._next[0] < key:
            self._next = next(self._states, None)
        if self._next is not None and self._next[0] == key:
            return self._next[1]
        return None


@dataclass
class _Output:
    """Rows of fact_change_point and change_point_state, kept as compact Arrow batches."""

    revisions: list[str]
    label: str = ""
    rows: list[dict] = field(default_factory=list)
    states: list[dict] = field(default_factory=list)
    tables: dict[str, list[pa.Table]] = field(default_factory=lambda: {TABLE: [], STATE: []})
    counts: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        self.label = self.label or method()

    def add(self, s: _Series, prior: SeriesState | None) -> None:
        state, how = analyze(s.seqs, s.values, prior)
        self.counts.series += 1
        self.counts.points += len(s.values)
        setattr(self.counts, how, getattr(self.counts, how) + 1)
        if state.found:
            values = s.values.tolist()
            bounds = [0, *(i for i, _ in state.found), len(values)]
            for n, (index, pvalue) in enumerate(state.found):
                before = values[bounds[n] : bounds[n + 1]]
                after = values[bounds[n + 1] : bounds[n + 2]]
                self.rows.append(
                    {
                        "series_digest": s.digest,
                        "revision_digest": self.revisions[s.rids[index]],
                        "previous_revision_digest": self.revisions[s.rids[index - 1]],
                        "point_index": index,
                        "points": len(values),
                        "before_points": len(before),
                        "after_points": len(after),
                        "before_median": statistics.median(before),
                        "after_median": statistics.median(after),
                        "pvalue": pvalue,
                        "method": self.label,
                    }
                )
        self.states.append(
            {
                "series_digest": s.digest,
                "points": state.points,
                "last_seq": state.last_seq,
                "prefix_digest": state.prefix_digest,
                "resume_index": state.resume_index,
                "weak_change_points": [
                    {
                        "index": w.index,
                        "qhat": w.qhat,
                        "left": w.left,
                        "right": w.right,
                        "mean_1": w.stats.mean_1,
                        "mean_2": w.stats.mean_2,
                        "std_1": w.stats.std_1,
                        "std_2": w.stats.std_2,
                        "pvalue": w.stats.pvalue,
                    }
                    for w in state.weak
                ],
                "change_points": [{"index": i, "pvalue": p} for i, p in state.found],
                "method": self.label,
            }
        )
        if len(self.rows) >= _FLUSH_ROWS or len(self.states) >= _FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        for table, rows in ((TABLE, self.rows), (STATE, self.states)):
            if rows:
                self.tables[table].append(pa.Table.from_pylist(rows, schema=SCHEMAS[table]))
                rows.clear()

    def result(self) -> dict[str, pa.Table]:
        """Both tables in series order (the output is small: a row per change point and one
        per series, not per result)."""
        self.flush()
        out = {}
        for name, parts in self.tables.items():
            table = pa.concat_tables(parts) if parts else SCHEMAS[name].empty_table()
            keys = [("series_digest", "ascending")] + ([("point_index", "ascending")] if name == TABLE else [])
            out[name] = table.sort_by(keys).combine_chunks()
        return out


def _run(
    con: duckdb.DuckDBPyConnection, results: str, revisions: pa.Table, state: str | pa.Table | None
) -> tuple[dict[str, pa.Table], Counts]:
    """Both tables from ``results`` (a relation over fact_result) and the prior ``state`` (a
    relation or table of change_point_state; None for none)."""
    runs = _runs(revisions)
    con.register("cp_runs", runs)
    prior: Iterable[pa.RecordBatch] = []
    if state is not None:
        # A second cursor: its reader runs beside the one over the points.
        cursor = con.cursor()
        if isinstance(state, pa.Table):
            cursor.register("cp_state", state)
            state = "cp_state"
        if _same_layout(cursor.sql(f"select * from {state} limit 0").to_arrow_table().schema):
            prior = cursor.sql(_state_sql(state)).to_arrow_reader(BATCH_ROWS)
    out = _Output(revisions=runs.column("revision_digest").to_pylist())
    join = _Join(_states(prior))
    for series in _series(con.sql(_points_sql(results)).to_arrow_reader(BATCH_ROWS)):
        out.add(series, join.get(series.key))
    return out.result(), out.counts


# --- Pure entry points (Polars frames in, Arrow tables out) ---------------------------------


def run_points(results: pl.DataFrame, revisions: pl.DataFrame) -> pl.DataFrame:
    """One point per series and gh-pages run, in series and run order.

    ``results`` has fact_result's series_digest, source, first_revision_digest, observed_at,
    result_digest and p50; ``revisions`` has dim_upstream_revision's revision_digest and seq.
    """
    runs = _runs(revisions.to_arrow())
    with duckdb.connect() as con:
        con.register("cp_results", results.to_arrow())
        con.register("cp_runs", runs)
        rows = pl.from_arrow(con.sql(_points_sql("cp_results")).to_arrow_table())
    points = rows.unique(["series_digest", "seq"], keep="first", maintain_order=True)
    digests = pl.Series("revision_digest", runs.column("revision_digest").to_pylist())
    return (
        points.with_columns(revision_digest=digests.gather(points["rid"]))
        .select("series_digest", "seq", "revision_digest", "p50")
        .sort("series_digest", "seq")
    )


def compute_with_state(
    results: pl.DataFrame, revisions: pl.DataFrame, state: pa.Table | None = None
) -> tuple[pa.Table, pa.Table, Counts]:
    """``fact_change_point`` and ``change_point_state`` of one generation, resuming each series
    from ``state`` (the previous ``change_point_state``) where it can."""
    with duckdb.connect() as con:
        con.register("cp_results", results.to_arrow())
        tables, counts = _run(con, "cp_results", revisions.to_arrow(), state)
    return tables[TABLE], tables[STATE], counts


def compute(results: pl.DataFrame, revisions: pl.DataFrame) -> pa.Table:
    """The whole ``fact_change_point`` table of one generation, from scratch."""
    return compute_with_state(results, revisions)[0]


# --- The generation -------------------------------------------------------------------------


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _parquet(uris: list[str]) -> str:
    return "read_parquet([" + ", ".join(_quote(u) for u in uris) + "])"


def prior_state_parts(gens: GenerationStore, gen: Generation) -> list[Part]:
    """The change_point_state parts of the generation ``gen`` is built on (none before the
    state existed)."""
    if not gen.parent:
        return []
    try:
        return gens.load(gen.parent).parts(STATE)
    except FileNotFoundError:
        return []


def add_to_generation(gens: GenerationStore, gen: Generation) -> tuple[dict[str, Part], Counts]:
    """Compute the change points of staged generation ``gen`` and re-stage it with them and
    their state.

    The parts are named by their content, so a refresh that changes no gh-pages run writes no
    new file and the new generation references the same parts as the last one.
    """
    from liger_warehouse.serve.database import cache_dir, open_duckdb

    scratch_root = cache_dir() / "duckdb-spill"
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="change-points-", dir=scratch_root)
    try:
        config = {"memory_limit": MEMORY_LIMIT, "temp_directory": scratch, "preserve_insertion_order": "false"}
        con = open_duckdb(gens.storage, config=config)
        try:
            revisions = gens.read_table(gen, "dim_upstream_revision", ["revision_digest", "seq"])
            results = gens.part_uris(gen, "fact_result")
            state = [gens.storage.uri(p.file) for p in prior_state_parts(gens, gen)]
            if results:
                tables, counts = _run(con, _parquet(results), revisions, _parquet(state) if state else None)
            else:
                tables, counts = {name: SCHEMAS[name].empty_table() for name in (TABLE, STATE)}, Counts()
        finally:
            con.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    parts = {name: gens.write_content_part(name, data) for name, data in tables.items()}
    for name, part in parts.items():
        gen.tables[name] = [part]
    gens.stage(gen)
    return parts, counts
