"""What the verdict benchmark reads from a warehouse: the anchor rules' cases, the series'
groups, the new rule's verdicts (``compare_runs``), and the same verdicts with each series'
noise recomputed under other constants in a scratch copy of the lake.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from pathlib import Path

import duckdb
from scipy.stats import norm

from benchmarks.verdict_rules import Case, Point
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import CATALOG_FILE, DATA_DIR, Lake
from liger_warehouse.lake.objects import sql_objects
from tests.plain_duckdb import open_views

# The run steps whose later run upstream lists before {run} ({op} is <), or up to it (<=).
STEPS_UNTIL = """
create or replace view fact_run_step as
select * from run_steps_all
where head_run in (
    select run from dim_upstream_revision
    where source = 'gh-pages'
        and seq {op} (select min(seq) from dim_upstream_revision where source = 'gh-pages' and run = {run})
)
"""

CASES_SQL = """
with base as (
    select seq from dim_upstream_revision where source = 'gh-pages' and run = $base
),
prior as (
    select series_digest, list(p50 order by run_seq) as prior
    from fact_run_point
    where run_seq <= (select seq from base)
    group by series_digest
),
-- the dashboard's golden run of each kernel; the default commit for a kernel it does not name
golden_run as (
    select k.kernel, coalesce(g.run, (select any_value(run) from golden_commit where is_default)) as run
    from (select distinct kernel from dim_series) as k
    left join golden_commit as g using (kernel)
),
golden as (
    select s.series_digest, any_value(gp.p50) as golden_p50, any_value(gs.gpu) as golden_gpu
    from dim_series as s
    join golden_run as r using (kernel)
    join fact_run_point as gp on gp.run = r.run
    join dim_series as gs
        on gs.series_digest = gp.series_digest
        and gs.kernel = s.kernel and gs.mode = s.mode and gs.provider = s.provider
        and gs.backend is not distinct from s.backend and gs.metric = s.metric and gs.workload = s.workload
    group by s.series_digest
)
select
    s.series_digest,
    lower_is_better(s.unit) as lower_is_better,
    b.p20, b.p50, b.p80,
    h.p20, h.p50, h.p80,
    coalesce(p.prior, []) as prior,
    g.golden_p50,
    g.golden_gpu is not null and g.golden_gpu <> s.gpu as golden_other_gpu
from fact_run_point as b
join fact_run_point as h using (series_digest)
join dim_series as s using (series_digest)
left join prior as p using (series_digest)
left join golden as g using (series_digest)
where b.run = $base and h.run = $head and b.p50 > 0 and h.p50 > 0
order by s.series_digest
"""


@dataclass(frozen=True)
class Series:
    """What the benchmark groups a series by."""

    metric: str
    is_liger: bool
    sweep_key: str


@dataclass
class Comparison:
    """The anchor rules' cases of one base and head run, and how many of those series the
    dashboard would judge against a golden run measured on another GPU."""

    cases: list[Case]
    golden_other_gpu: int


def open_database(catalog: Path) -> duckdb.DuckDBPyConnection:
    """The lake of ``catalog`` (a warehouse's catalog.sqlite, its data beside it), read-only."""
    return open_views(catalog)


def derived_sql(table: str) -> str:
    """The ``select`` of ``sql/derived/<table>.sql``."""
    (file,) = [f for f in sql_objects() if f.kind == "derived" and f.name == table]
    return file.sql.rstrip().rstrip(";")


def series(con: duckdb.DuckDBPyConnection, run: str) -> dict[str, Series]:
    """The series of ``run``."""
    rows = con.execute(
        "select series_digest, metric, is_liger, sweep_key from fact_run_point join dim_series using (series_digest) "
        "where run = ?",
        [run],
    ).fetchall()
    return {digest: Series(metric, liger, sweep) for digest, metric, liger, sweep in rows}


def comparison(con: duckdb.DuckDBPyConnection, base: str, head: str) -> Comparison:
    """The series with p50 > 0 in both runs, as the anchor rules see them."""
    rows = con.execute(CASES_SQL, {"base": base, "head": head}).fetchall()
    cases = [
        Case(digest, lower, Point(b20, b50, b80), Point(h20, h50, h80), tuple(prior), golden)
        for digest, lower, b20, b50, b80, h20, h50, h80, prior, golden, _ in rows
    ]
    return Comparison(cases, sum(1 for *_, other in rows if other))


def new_rule(
    con: duckdb.DuckDBPyConnection, base: str, head: str, threshold: float | None = None, recent: bool = True
) -> dict[str, str]:
    """The verdict of ``compare_runs(base, head)`` per series (at ``threshold``, the default 5%
    when None; ``recent``: also against the base run's recent level)."""
    sql = "select series_digest, verdict from compare_runs(?, ?, threshold := ?, recent := ?)"
    return dict(con.execute(sql, [base, head, threshold, recent]).fetchall())


def _literal(value: object) -> str:
    if isinstance(value, Decimal | float):
        return repr(float(value))
    if isinstance(value, int):
        return str(value)
    raise TypeError(f"verdict_rule() constant of unexpected type: {value!r}")


@dataclass(frozen=True)
class Setting:
    """Constants of ``verdict_rule()`` to measure the new rule with, and the arguments of
    ``compare_runs`` a user can set: its threshold (None: the default 5%) and whether the head
    is also judged against the base run's recent level."""

    label: str
    overrides: tuple[tuple[str, float], ...] = ()
    threshold: float | None = None
    recent: bool = True


def _significance(value: float) -> Setting:
    return Setting(f"significance {value:g}", (("significance", value),))


# The significance dial of the new rule, from the threshold alone (0) to stricter than the default
# (5): its recall against false alarms, to set beside each anchor rule's (benchmarks/verdict_curve.py).
DIAL = (0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 7, 8)
DEFAULT_THRESHOLD = 0.05  # compare_runs' own: the dial above runs at it, with the recent level
# One constant at a time on either side of its default ("defaults": the scratch copy's own noise
# recomputed, which must give the lake's verdicts).
SENSITIVITY = (
    Setting("defaults"),
    *(_significance(v) for v in (4.0, 6.0)),
    *(Setting(f"doubt {v:g}", (("doubt", v),)) for v in (2.0, 4.0)),
    *(Setting(f"equivalence {v:.0%}", (("equivalence", v),)) for v in (0.20, 0.30)),
    *(Setting(f"prior_steps {v:g}", (("prior_steps", v),)) for v in (5.0, 20.0)),
    *(Setting(f"sweep_quantile {v:g}", (("sweep_quantile", v),)) for v in (0.5, 0.9)),
)


@dataclass(frozen=True)
class Grid:
    """The settings the new rule is measured at besides its defaults: the significance ``dial``,
    the ``sensitivity`` settings, and the significances of ``significances`` at each of
    ``thresholds`` with and without the recent level (the dial itself, at the default threshold
    with it, left out): the other settings a user has, which reach further along the recall axis
    (more false alarms too)."""

    thresholds: tuple[float, ...]
    significances: tuple[float, ...]
    dial: tuple[float, ...] = DIAL
    sensitivity: tuple[Setting, ...] = SENSITIVITY

    @cached_property  # read in every loop over the scenarios
    def operating(self) -> tuple[Setting, ...]:
        """The dial's settings, at the default threshold with the recent level."""
        return tuple(_significance(v) for v in self.dial)

    @cached_property
    def settings(self) -> tuple[Setting, ...]:
        return tuple(
            Setting(
                f"significance {v:g}, threshold {threshold * 100:g}%" + ("" if recent else ", base run alone"),
                (("significance", v),),
                threshold,
                recent,
            )
            for threshold in self.thresholds
            for recent in (True, False)
            for v in self.significances
            if (threshold, recent) != (DEFAULT_THRESHOLD, True)
        )

    @property
    def other_thresholds(self) -> tuple[float, ...]:
        """Where the dial also runs with the recent level."""
        return tuple(t for t in self.thresholds if t != DEFAULT_THRESHOLD)


# "full" is what docs/VERDICTS.md reports; "coarse" keeps the thresholds and the base run alone at a
# few points; "smoke" keeps every kind of setting at one or two, for the tests of the machinery
# (each setting is one compare_runs per comparison).
GRIDS = {
    "full": Grid(
        thresholds=(DEFAULT_THRESHOLD, 0.055, 0.06, 0.065, 0.07, 0.08, 0.10),
        significances=(0, 0.25, 0.5, 0.75, 1, 1.125, 1.25, 1.375, 1.5, 2, 3, 5),
    ),
    "coarse": Grid((DEFAULT_THRESHOLD, 0.07), (0, 1, 5)),
    "smoke": Grid((DEFAULT_THRESHOLD, 0.07), (0, 5), dial=(0, 5, 8), sensitivity=SENSITIVITY[:2]),
}


class Scratch:
    """A read-write copy of a warehouse's lake (in directory ``path``) whose series noise is
    recomputed from ``sql/derived/fact_series_spread.sql`` and ``fact_series_noise.sql`` under
    other ``verdict_rule()`` constants, or from fewer run steps. The catalog is copied and the
    data files hard-linked: DuckLake never writes a file in place, so the warehouse's own files
    stay as they are. The copy is deleted on ``close``.
    """

    def __init__(self, catalog: Path, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        shutil.copyfile(catalog, path / CATALOG_FILE)
        shutil.copytree(catalog.parent / DATA_DIR, path / DATA_DIR, copy_function=os.link)
        self.path = path
        self.con = open_lake(Lake.of(str(path)))
        self.defaults: dict = self.con.execute("select verdict_rule()").fetchone()[0]
        # The run steps do not depend on the constants: computed once; fact_run_step becomes a
        # view of them, over all runs or only some.
        self.con.execute("create table run_steps_all as select * from fact_run_step")
        self.con.execute("drop table fact_run_step")

    def recompute(self, overrides: dict[str, float], until_run: str | None = None, including: bool = False) -> None:
        """Replace ``verdict_rule()`` by the defaults with ``overrides`` and rebuild the series noise
        (and, over the whole history, the environment shifts) from the run steps; with ``until_run``,
        from the steps between runs upstream lists before that run only (the noise of a run it has
        never seen), or, ``including`` it, up to that run (the noise the refresh that brought the run
        computed). Another ``sweep_quantile`` comes with its matching ``sweep_scale``.
        """
        rule = {**self.defaults, **overrides}
        if "sweep_quantile" in overrides:  # read against the matching scale of the normal
            rule["sweep_scale"] = float(norm.ppf((1 + float(overrides["sweep_quantile"])) / 2))
        body = ", ".join(f"'{name}': {_literal(value)}" for name, value in rule.items())
        self.con.execute(f"create or replace macro verdict_rule() as {{{body}}}")
        if until_run:
            run = "'" + until_run.replace("'", "''") + "'"
            self.con.execute(STEPS_UNTIL.format(op="<=" if including else "<", run=run))
        else:
            self.con.execute("create or replace view fact_run_step as select * from run_steps_all")
        # fact_series_spread is a view over fact_run_step: the noise table is derived again, and,
        # over the whole history, the environment shifts, which are read against the significance
        # and the noise (a reading of fewer runs keeps the lake's: it would lose the head's shift).
        for table in ("fact_series_noise",) if until_run else ("fact_series_noise", "fact_environment_step"):
            self.con.execute(f"create or replace table {table} as {derived_sql(table)}")

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self.path, ignore_errors=True)
