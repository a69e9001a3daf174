"""What the report shows, read from the public views of the lake (read-only).

Every number comes from a view in ``sql/``: ``version_history`` (one point per series and
build; the report draws the release builds), ``speedup_history`` (Liger against each baseline in
the same run), ``regressions`` (with its triage: the open regressions are those neither
acknowledged nor muted nor retracted by the later builds), ``change_points`` and
``series_noise``; the kernel pages read theirs in ``kernels``. This module only narrows and
aggregates them to a size a page can hold; what a point, a regression or a change point is
stays the views' business.

Two aggregation choices keep the page small and honest:

* p50 across versions is shown for one **representative workload** per kernel: the workload
  (x value and config) measured in the most versions, then on the most GPUs and providers, then
  the largest x. Raw p50s at different x values are not comparable, so a median over the x sweep
  would move whenever a version measured a different sweep.
* A speedup is a ratio, comparable across x, so the speedup per version is the **geometric mean
  over the whole x sweep** of a kernel (with the min and max kept for the tooltip).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from liger_warehouse.lake.connect import snapshot_of
from liger_warehouse.lake.location import ALIAS

PUBLIC_VIEWS = ("version_history", "speedup_history", "regressions", "change_points", "series_noise")
TABLE_ROWS = 100

# An implementation as a reader names it: the provider, plus the backend when the provider's
# name does not already say it (liger on the cuTile file is not liger on Triton). Baselines
# have no backend (null), so they are named by their provider alone.
IMPLEMENTATION = (
    "case when backend is null or backend = 'triton' or ends_with(provider, backend) then provider "
    "else provider || ' (' || backend || ')' end"
)

REPRESENTATIVE_SQL = """
with coverage as (
    select kernel, workload, x_name, x_value, any_value(config_json) as config_json,
           count(distinct liger_version) as versions, count(*) as points,
           max(try_cast(x_value as double)) as x
    from report_points
    group by kernel, workload, x_name, x_value
)
select kernel, workload, x_name, x_value, config_json, versions
from coverage
qualify row_number() over (
    partition by kernel order by versions desc, points desc, x desc nulls last, workload
) = 1
order by kernel
"""

P50_SQL = f"""
select h.kernel, h.metric || ' · ' || h.mode || ' (' || h.unit || ')' as measurement, h.metric, h.mode, h.unit, h.gpu,
       {IMPLEMENTATION} as implementation, h.liger_version as version, h.build_rank as version_rank,
       h.p20, h.p50, h.p80, h.runs as results
from report_points as h
join representative as r using (kernel, workload)
order by h.kernel, measurement, h.gpu, implementation, h.build_rank
"""

SPEEDUP_SQL = """
select h.kernel, h.gpu, h.mode, h.liger_provider, h.baseline_provider, h.build as version, h.build_rank as version_rank,
       exp(avg(ln(h.speedup))) as speedup, min(h.speedup) as min_speedup, max(h.speedup) as max_speedup,
       count(*) as workloads
from speedup_history as h
join dim_build as b using (build)
where h.metric = 'speed' and h.speedup > 0 and b.build_kind = 'release'
group by all
order by h.kernel, h.gpu, h.mode, h.liger_provider, h.baseline_provider, version_rank
"""

# The long workload slug goes last so the numbers stay in view in a narrow window.
REGRESSION_COLUMNS = (
    "kernel", "provider", "mode", "metric", "gpu", "base_version", "head_version",
    "base_p50", "head_p50", "unit", "change", "workload",
)  # fmt: skip
# The flagged steps of ``regressions``, read once (the view judges every step of every series):
# the counts, the tables of the index and those of the kernel pages all come from this table.
FLAGGED_REGRESSIONS_SQL = """
create or replace temp table report_regressions as
select r.*, b.build_rank as head_version_rank, left(regexp_replace(r.series_digest, '^sha256:', ''), 12) as series
from regressions as r
join dim_build as b on b.build = r.head_version
where r.verdict in ('regression', 'improvement', 'environment')
"""
REGRESSION_COUNTS_SQL = """
select head_version as version, any_value(head_version_rank) as version_rank, verdict, count(*) as steps
from report_regressions
where starts_with(provider, 'liger')
group by head_version, verdict
order by version_rank, verdict
"""
# Open: flagged, neither acknowledged nor muted (docs/TRIAGE.md), of any implementation, and not
# taken back by the later builds (``confirmation`` 'retracted'; null while there are none yet).
OPEN_WHERE = (
    "verdict = 'regression' and acknowledged is null and not muted and coalesce(confirmation, '') <> 'retracted'"
)
OPEN_ORDER = "head_version_rank desc, confirmation = 'confirmed' desc, abs(adjusted_change) desc, kernel, series"
OPEN_ROWS = 500
OPEN_COLUMNS = (
    "kernel", "provider", "mode", "metric", "gpu", "base_version", "head_version",
    "change", "adjusted_change", "confirmation", "annotations", "series", "workload",
)  # fmt: skip
OPEN_COUNTS_SQL = f"""
select kernel, count(*) as open, count(*) filter (where confirmation = 'confirmed') as confirmed
from report_regressions
where {OPEN_WHERE}
group by kernel
"""

CHANGE_POINT_COLUMNS = (
    "kernel", "provider", "mode", "metric", "gpu", "prev_run", "run",
    "before_median", "after_median", "unit", "change", "verdict", "pvalue", "workload",
)  # fmt: skip
CHANGE_POINT_COUNTS_SQL = """
select run, run_seq, verdict, count(*) as change_points
from change_points
where starts_with(provider, 'liger')
group by run, run_seq, verdict
order by run_seq, verdict
"""


# How many Liger series of each kernel and pass are too noisy to guard a 25% change, one run
# against one run (docs/VERDICTS.md): a finding worth showing upstream.
NOISE_THRESHOLD = 0.25
NOISE_COUNTS_SQL = f"""
select kernel, mode, gpu, count(*) as series,
       count(*) filter (where detectable_change > {NOISE_THRESHOLD}) as too_noisy,
       median(detectable_change) as median_detectable_change
from series_noise
where is_liger and metric = 'speed' and history >= 5
group by all
order by too_noisy desc, series desc, kernel, mode, gpu
"""
NOISE_COLUMNS = ("kernel", "mode", "provider", "gpu", "workload", "detectable_change", "noise", "history")


@dataclass
class Table:
    """Rows of a table section: the first ``TABLE_ROWS`` and how many there are in all."""

    columns: list[str]
    rows: list[tuple]
    total: int
    query: str


@dataclass
class ReportData:
    snapshot: int
    created_at: str
    counts: dict[str, int]
    missing: list[str]
    representative: list[dict] = field(default_factory=list)
    p50: list[dict] = field(default_factory=list)
    speedup: list[dict] = field(default_factory=list)
    regression_counts: list[dict] = field(default_factory=list)
    regressions: Table | None = None
    change_point_counts: list[dict] = field(default_factory=list)
    change_points: Table | None = None
    noise_counts: list[dict] = field(default_factory=list)
    noise: Table | None = None
    open: Table | None = None  # the open regressions, newest first
    open_counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # kernel: (open, confirmed)
    kernels: list[str] = field(default_factory=list)  # every kernel with a series


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("select view_name from duckdb_views()").fetchall()}


def _table(
    con: duckdb.DuckDBPyConnection,
    view: str,
    where: str,
    columns: tuple[str, ...],
    order: str,
    source: str = "",
    limit: int = TABLE_ROWS,
) -> Table:
    """The first rows of ``view`` (or of ``source``, a query over it) and the query that lists them all."""
    source = source or view
    total = con.execute(f"select count(*) from {source} where {where}").fetchone()[0]
    rows = con.execute(
        f"select {', '.join(columns)} from {source} where {where} order by {order} limit {limit}"
    ).fetchall()
    return Table(list(columns), rows, total, f"select * from {view} where {where}")


def _counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    row = con.execute(
        "select count(*), count(distinct series_digest), count(distinct liger_version), "
        "count(distinct environment_digest) from fact_result"
    ).fetchone()
    return dict(zip(("results", "series", "versions", "gpus"), row, strict=True))


def load(con: duckdb.DuckDBPyConnection) -> ReportData:
    """Everything the report draws, from a reader of the lake."""
    snapshot, created_at = _snapshot(con)
    views = _views(con)
    data = ReportData(snapshot, created_at, _counts(con), [v for v in PUBLIC_VIEWS if v not in views])
    if "version_history" in views:
        # Read the view once: the representative workloads and their points both come from it.
        con.execute(
            "create or replace temp table report_points as select * from version_history where build_kind = 'release'"
        )
        data.representative = _dicts(con, REPRESENTATIVE_SQL)
        data.p50 = _dicts(con, f"with representative as ({REPRESENTATIVE_SQL}) {P50_SQL}")
    if "speedup_history" in views:
        data.speedup = _dicts(con, SPEEDUP_SQL)
    liger = "starts_with(provider, 'liger')"
    data.kernels = [k for (k,) in con.execute("select distinct kernel from dim_series order by kernel").fetchall()]
    if "regressions" in views:
        con.execute(FLAGGED_REGRESSIONS_SQL)
        data.regression_counts = _dicts(con, REGRESSION_COUNTS_SQL)
        data.regressions = _table(
            con,
            "regressions",
            f"{liger} and verdict = 'regression'",
            REGRESSION_COLUMNS,
            "head_version_rank desc, change desc, kernel",
            "report_regressions",
        )
        data.open = _table(con, "regressions", OPEN_WHERE, OPEN_COLUMNS, OPEN_ORDER, "report_regressions", OPEN_ROWS)
        data.open_counts = {k: (n, c) for k, n, c in con.execute(OPEN_COUNTS_SQL).fetchall()}
    if "change_points" in views:
        data.change_point_counts = _dicts(con, CHANGE_POINT_COUNTS_SQL)
        data.change_points = _table(
            con, "change_points", liger, CHANGE_POINT_COLUMNS, "run_seq desc, abs(change) desc, kernel"
        )
    if "series_noise" in views:
        data.noise_counts = _dicts(con, NOISE_COUNTS_SQL)
        data.noise = _table(
            con,
            "series_noise",
            f"is_liger and metric = 'speed' and history >= 5 and detectable_change > {NOISE_THRESHOLD}",
            NOISE_COLUMNS,
            "detectable_change desc, kernel, mode, workload",
        )
    return data


def _snapshot(con: duckdb.DuckDBPyConnection) -> tuple[int, str]:
    """The snapshot ``con`` reads and when it was committed (UTC, to the second)."""
    snapshot = snapshot_of(con)
    (at,) = con.execute(
        f"select strftime(snapshot_time at time zone 'UTC', '%Y-%m-%d %H:%M:%S UTC') "
        f"from ducklake_snapshots('{ALIAS}') where snapshot_id = ?",
        [snapshot],
    ).fetchone()
    return snapshot, at
