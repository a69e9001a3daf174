"""What each kernel's page shows, read from the public views in a few queries over all kernels.

A kernel page draws its series' p50 per gh-pages run (``run_history``) and marks the runs where
something happened: the change points of a series (``change_points``), the environment shifts
(``environment_shifts``), the acknowledgements and the annotations that reach the kernel's series
(``triage_reach``). Its table lists the kernel's regressions (``regressions``, read once into
``report_regressions`` by ``data.load``).

The points are stored the compact way: one row per series (``series``: GPU, workload,
measurement, implementation) and one per point naming its series by number, so that even a
kernel of a thousand series stays a page of a few hundred kilobytes. When a kernel has more than
``MAX_POINTS`` points, its measurements are kept speed first (full, forward, backward) until the
budget is spent; the page names what it left out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import duckdb

from liger_warehouse.report.data import IMPLEMENTATION, TABLE_ROWS, Table

MAX_POINTS = 20_000
MODE_ORDER = ("full", "forward", "backward")
KERNEL_REGRESSION_COLUMNS = (
    "provider", "mode", "metric", "gpu", "base_version", "head_version", "change", "adjusted_change", "noise",
    "confirmation", "acknowledged", "acknowledgement", "muted", "annotations", "series", "workload",
)  # fmt: skip
KERNEL_REGRESSION_ORDER = "head_version_rank desc, abs(adjusted_change) desc, provider, mode, gpu, series"

POINTS_SQL = f"""
select kernel, series_digest, gpu, workload, x_value,
       metric || ' · ' || mode || ' (' || unit || ')' as measurement, {IMPLEMENTATION} as implementation, unit,
       run, p20, p50, p80
from run_history
order by kernel, series_digest, run_seq
"""
MEASUREMENT = 5  # its place in a row of POINTS_SQL
RUNS_SQL = """
select r.run, b.build
from run_code_order as r
left join dim_build as b on list_contains(b.runs, r.run)
qualify row_number() over (partition by r.run order by b.build_rank desc) = 1
order by r.upload_rank
"""
CHANGES_SQL = """
select kernel, series_digest, run, change, verdict, pvalue, before_median, after_median
from change_points
order by kernel, run_seq, series_digest
"""
SHIFTS_SQL = """
select run, direction, moved, series, moved_share, kernels_moved, kernels, moved_kernels
from environment_shifts
order by upload_rank
"""
# ``triage_reach`` read once, with each series' kernel and GPU (NULL for notes on runs alone).
REACH_SQL = """
create or replace temp table report_reach as
select s.kernel, s.gpu, t.*
from triage_reach as t
left join dim_series as s using (series_digest)
"""
# Each acknowledgement and annotation once per kernel and GPU it reaches; notes on runs alone
# (no series) reach every kernel.
ACKS_SQL = """
select kernel, gpu, a.run, a.kind, a.note, scope, count(*) as series
from (select kernel, gpu, scope, unnest(acks) as a from report_reach where kernel is not null)
group by all
order by kernel, min(a.recorded_at)
"""
NOTES_SQL = """
select kernel, gpu, n.first_rank, n.last_rank, n.whole, n.note, scope, count(*) as series
from (select kernel, gpu, scope, unnest(notes) as n from report_reach)
group by all
order by kernel nulls first, min(n.recorded_at)
"""
STATE_SQL = """
select kernel, scope, target, muted, muted_by, mute_note, threshold, threshold_by, threshold_note, count(*) as series
from report_reach
where kernel is not null and (muted or threshold is not null)
group by all
order by kernel, scope, target
"""
KERNEL_REGRESSIONS_SQL = f"""
select kernel, {", ".join(KERNEL_REGRESSION_COLUMNS)}, count(*) over (partition by kernel) as total
from report_regressions
where verdict = 'regression'
qualify row_number() over (partition by kernel order by {KERNEL_REGRESSION_ORDER}) <= {TABLE_ROWS}
order by kernel, {KERNEL_REGRESSION_ORDER}
"""


@dataclass
class KernelHistory:
    """One kernel's page: its runs, series, points and marks, its triage and its regressions."""

    kernel: str
    runs: list[str] = field(default_factory=list)  # the runs that measured it, in upload order
    run_builds: list[dict] = field(default_factory=list)  # each run with the build it measured
    series: list[dict] = field(default_factory=list)  # numbered by place: ``s`` of a point
    points: list[dict] = field(default_factory=list)
    changes: list[dict] = field(default_factory=list)
    marks: list[dict] = field(default_factory=list)  # environment shifts, acknowledgements, annotations
    notes: list[str] = field(default_factory=list)  # annotations of the whole history
    triage: list[str] = field(default_factory=list)  # mutes and thresholds that reach it
    regressions: Table | None = None
    left_out: list[str] = field(default_factory=list)  # measurements over the point budget

    @property
    def gpus(self) -> list[str]:
        return sorted({s["gpu"] for s in self.series})

    @property
    def measurements(self) -> list[str]:
        return sorted({s["measurement"] for s in self.series}, key=measurement_order)

    @property
    def workloads(self) -> list[str]:
        keyed = {s["workload"]: _number(s["x_value"]) for s in self.series}
        return sorted(keyed, key=lambda w: (keyed[w] is None, keyed[w], w))


def measurement_order(measurement: str) -> tuple:
    """Speed before memory, then the full pass, forward, backward, then the rest by name."""
    metric, _, rest = measurement.partition(" · ")
    mode = rest.split(" (")[0]
    return metric != "speed", MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), measurement


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def short_digest(digest: str) -> str:
    """The first 12 hex digits of a series digest: what a reader types to name the series."""
    return digest.removeprefix("sha256:")[:12]


def _round(value: float | None) -> float | None:
    """Four significant digits: what a chart and a tooltip show, in a third of the bytes."""
    return None if value is None else float(f"{value:.4g}")


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def _names(con: duckdb.DuckDBPyConnection) -> set[str]:
    sql = "select view_name from duckdb_views() union select table_name from duckdb_tables()"
    return {n for (n,) in con.execute(sql).fetchall()}


def load(con: duckdb.DuckDBPyConnection, kernels: list[str]) -> dict[str, KernelHistory]:
    """The page of every kernel in ``kernels``; parts whose view the lake lacks stay empty."""
    pages = {k: KernelHistory(k) for k in kernels}
    names = _names(con)
    if "run_history" not in names:
        return pages
    builds = dict(_rows(con, RUNS_SQL)) if {"run_code_order", "dim_build"} <= names else {}
    keys = _points(pages, _rows(con, POINTS_SQL), builds)
    if "change_points" in names:
        _changes(pages, _rows(con, CHANGES_SQL), keys)
    if "environment_shifts" in names:
        _shifts(pages, _rows(con, SHIFTS_SQL))
    if "triage_reach" in names:
        con.execute(REACH_SQL)
        _acks(pages, _rows(con, ACKS_SQL))
        _notes(pages, _rows(con, NOTES_SQL), list(builds))
        _state(pages, _rows(con, STATE_SQL))
    if "report_regressions" in names:
        _regressions(pages, con.execute(KERNEL_REGRESSIONS_SQL))
    return pages


def _points(pages: dict[str, KernelHistory], rows: list[tuple], builds: dict[str, str | None]) -> dict[tuple, dict]:
    """Fill the runs, series and points of each page (``builds``: each run's build, in upload
    order); returns each point by (series digest, run)."""
    order = {run: i for i, run in enumerate(builds)}
    by_kernel: dict[str, list[tuple]] = defaultdict(list)
    for row in rows:
        if row[0] in pages:
            by_kernel[row[0]].append(row)
    keys: dict[tuple, dict] = {}
    for kernel, kernel_rows in by_kernel.items():
        page = pages[kernel]
        kept = _within_budget(page, kernel_rows)
        numbers: dict[str, int] = {}
        runs: set[str] = set()
        for _, digest, gpu, workload, x_value, measurement, implementation, unit, run, p20, p50, p80 in kept:
            if digest not in numbers:
                numbers[digest] = len(page.series)
                page.series.append(
                    {"s": numbers[digest], "gpu": gpu, "workload": workload, "x_value": x_value,
                     "measurement": measurement, "implementation": implementation, "unit": unit,
                     "digest": short_digest(digest)}
                )  # fmt: skip
            point = {"s": numbers[digest], "run": run, "p50": _round(p50), "p20": _round(p20), "p80": _round(p80)}
            page.points.append(point)
            keys[digest, run] = point
            runs.add(run)
        page.runs = sorted(runs, key=lambda r: (order.get(r, len(order)), r))
        page.run_builds = [{"run": run, "build": builds.get(run)} for run in page.runs]
    return keys


def _within_budget(page: KernelHistory, rows: list[tuple]) -> list[tuple]:
    """The rows of the measurements that fit ``MAX_POINTS``, speed first (always the first one)."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row[MEASUREMENT]] += 1
    kept, total = set(), 0
    for measurement in sorted(counts, key=measurement_order):
        if kept and total + counts[measurement] > MAX_POINTS:
            page.left_out.append(measurement)
            continue
        kept.add(measurement)
        total += counts[measurement]
    return [row for row in rows if row[MEASUREMENT] in kept] if page.left_out else rows


def _changes(pages: dict[str, KernelHistory], rows: list[tuple], keys: dict[tuple, dict]) -> None:
    """Each change point at its series' point of that run (left out with its measurement)."""
    for kernel, digest, run, change, verdict, pvalue, before, after in rows:
        point = keys.get((digest, run))
        if kernel in pages and point is not None:
            pages[kernel].changes.append(
                {"s": point["s"], "run": run, "p50": point["p50"], "change": _round(change), "verdict": verdict,
                 "pvalue": _round(pvalue), "before": _round(before), "after": _round(after)}
            )  # fmt: skip


def _mark(page: KernelHistory, kind: str, run: str, label: str, note: str, gpus: list[str] | None = None) -> None:
    """A mark at ``run`` on the panel of each of ``gpus`` (all of the kernel's), if it measured that run."""
    if run not in page.runs:
        return
    known = page.gpus
    for gpu in known if gpus is None else [g for g in gpus if g in known]:
        page.marks.append({"kind": kind, "gpu": gpu, "run": run, "label": label, "note": note})


def _shifts(pages: dict[str, KernelHistory], rows: list[tuple]) -> None:
    """Every environment shift on every kernel that ran in it, saying whether the kernel moved."""
    for run, direction, moved, series, share, kernels_moved, kernels, moved_kernels in rows:
        for page in pages.values():
            this = "moved with it" if page.kernel in (moved_kernels or []) else "did not move"
            note = (
                f"{moved} of {series} Liger series ({share:.0%}) of {kernels_moved} of {kernels} kernels "
                f"moved {direction}; {page.kernel} {this}"
            )
            _mark(page, "environment", run, f"environment shift ({direction})", note)


def _acks(pages: dict[str, KernelHistory], rows: list[tuple]) -> None:
    """Each acknowledgement at its run, on the GPUs whose series it reaches."""
    for kernel, gpu, run, kind, note, scope, series in rows:
        if kernel in pages:
            label = f"acknowledged ({kind}), {scope}: {series} series on this GPU"
            _mark(pages[kernel], "acknowledged", run, label, note, [gpu])


def _notes(pages: dict[str, KernelHistory], rows: list[tuple], runs: list[str]) -> None:
    """Annotations of runs as marks at each run they span; those of a whole history as text."""
    for kernel, gpu, first, last, whole, note, scope, series in rows:
        targets = [pages[kernel]] if kernel in pages else list(pages.values()) if kernel is None else []
        for page in targets:
            if whole:
                if note not in page.notes:
                    page.notes.append(note)
                continue
            reach = "every series" if scope == "run" else f"{scope}: {series} series on this GPU"
            for run in runs[first - 1 : last]:  # upload ranks count from 1
                _mark(page, "annotation", run, f"annotation, {reach}", note, [gpu] if gpu else None)


def _state(pages: dict[str, KernelHistory], rows: list[tuple]) -> None:
    """The mutes and thresholds that stand, one line each, with who set them and why."""
    for kernel, scope, target, muted, muted_by, mute_note, threshold, by, note, series in rows:
        if kernel not in pages:
            continue
        what = f"{scope} {target if scope == 'kernel' else short_digest(target)} ({series} series)"
        if muted:
            pages[kernel].triage.append(f"muted: {what}, by {muted_by}" + (f": {mute_note}" if mute_note else ""))
        if threshold is not None:
            pages[kernel].triage.append(f"threshold {threshold:.0%}: {what}, by {by}" + (f": {note}" if note else ""))


def _regressions(pages: dict[str, KernelHistory], cursor: duckdb.DuckDBPyConnection) -> None:
    """Each kernel's table: its first regressions and the query that lists them all."""
    by_kernel: dict[str, list[tuple]] = defaultdict(list)
    totals: dict[str, int] = {}
    for kernel, *row, total in cursor.fetchall():
        by_kernel[kernel].append(tuple(row))
        totals[kernel] = total
    for kernel, page in pages.items():
        literal = kernel.replace("'", "''")
        query = f"select * from regressions where kernel = '{literal}' and verdict = 'regression'"
        page.regressions = Table(
            list(KERNEL_REGRESSION_COLUMNS), by_kernel.get(kernel, []), totals.get(kernel, 0), query
        )
