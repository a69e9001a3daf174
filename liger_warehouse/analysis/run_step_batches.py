"""``run_steps`` for ``fact_series_noise``, computed a batch of gh-pages runs at a time.

``run_steps`` decomposes every step between consecutive runs of every series. Whole, at 10^7
results its plan holds several copies of the 10^7 steps with their keys: it ran out of DuckDB's
1 GB limit after spilling 39 GB, and so did the busiest GPU's series alone (6.3M steps). Every
median of a step's decomposition is over the series of one pair of runs, and a series' step
into a run starts from the run before it that holds the series: so the steps into a batch of
runs need only the run points of those runs and of the runs their steps start from. Each batch
is computed over views narrowed to those, and its steps (the columns the noise model reads) are
gathered in a DuckDB table, which spills past the memory limit; the model then reads that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import duckdb
import pyarrow as pa

from liger_warehouse.serve.database import SQL_DIR
from liger_warehouse.store.generations import Generation, Part

# Run points of the runs a batch's steps go into (a run with more is a batch of its own).
STEP_BATCH_POINTS = 1_000_000
# The columns of run_steps that fact_series_noise reads: only these are gathered.
NOISE_STEP_COLUMNS = ("series_digest", "sweep_key", "pair", "residual_log", "sweep_own_log", "sweep_series")
# Each gh-pages run, in upstream's order, with its run points and the runs that its series'
# steps into it start from (as `run_steps` orders a series' runs).
RUNS_AND_PREVIOUS = """
with ordered as (
    select p.run, r.seq, lag(p.run) over (partition by p.series_digest order by r.seq) as prev_run
    from fact_run_point as p
    join dim_upstream_revision as r on r.source = 'gh-pages' and r.run = p.run
)
select run, count(*) as points, coalesce(list(distinct prev_run) filter (where prev_run is not null), []) as previous
from ordered
group by run
order by min(seq), run
"""

Narrowing = Callable[[duckdb.DuckDBPyConnection, Generation, dict[str, tuple[list[Part], str]]], AbstractContextManager]


@contextmanager
def batched_run_steps(con: duckdb.DuckDBPyConnection, gen: Generation, narrowed: Narrowing) -> Iterator[None]:
    """Within the block, ``run_steps`` on ``con`` reads a temporary table of its rows (its
    ``NOISE_STEP_COLUMNS``), computed a batch of runs at a time over views ``narrowed`` to
    their points; after it, the view itself again."""
    columns = ", ".join(NOISE_STEP_COLUMNS)
    con.execute(f"create or replace temp table run_step_rows as select {columns} from run_steps where false")
    try:
        for heads, runs in _batches(con):
            points = [p for p in gen.parts("fact_run_point") if p.key in runs]
            con.register("head_run", pa.table({"run": pa.array(heads, pa.string())}))
            # run_steps reads only the 'run' sides of side_points
            views = {"fact_run_point": (points, ""), "fact_recent_point": ([], ""), "fact_build_point": ([], "")}
            with narrowed(con, gen, views):
                con.execute(
                    f"insert into run_step_rows select {columns} from run_steps "
                    "where pair.head_key in (select run from head_run)"
                )
        con.execute("create or replace view run_steps as select * from run_step_rows")
        yield
    finally:
        con.execute((SQL_DIR / "views" / "run_steps.sql").read_text())
        con.execute("drop table if exists run_step_rows")


def _batches(con: duckdb.DuckDBPyConnection) -> Iterator[tuple[list[str], set[str]]]:
    """Runs in upstream's order, in batches of at most ``STEP_BATCH_POINTS`` run points, each
    with the runs its steps need: its own and those they start from."""
    heads: list[str] = []
    runs: set[str] = set()
    held = 0
    for run, points, previous in con.execute(RUNS_AND_PREVIOUS).fetchall():
        if heads and held + points > STEP_BATCH_POINTS:
            yield heads, runs
            heads, runs, held = [], set(), 0
        heads.append(run)
        runs |= {run, *previous}
        held += points
    if heads:
        yield heads, runs
