"""The gh-pages runs whose steps ``fact_run_step`` derives, in batches, each with the runs its
steps need.

``fact_run_step`` decomposes every step between consecutive runs of every series. Whole, at
10^7 results its plan holds several copies of the 10^7 steps with their keys: it ran out of
DuckDB's 1 GB limit after spilling 39 GB, and so did the busiest GPU's series alone (6.3M
steps). Every median of a step's decomposition is over the series of one pair of runs, and a
series' step into a run starts from the run before it that holds the series: so the steps into
a batch of runs need only the run points of those runs and of the runs their steps start from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

# Run points of the runs a batch's steps go into (a run with more is a batch of its own).
STEP_BATCH_POINTS = 1_000_000
# Each gh-pages run, in upstream's order, with its run points and the runs that its series'
# steps into it start from (as `fact_run_step` orders a series' runs).
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


def step_batches(runs: Iterable[tuple[str, int, list[str]]]) -> Iterator[tuple[set[str], set[str]]]:
    """``runs`` (rows of ``RUNS_AND_PREVIOUS``) in batches of at most ``STEP_BATCH_POINTS`` run
    points: the runs whose steps a batch derives, and the runs those steps need (their own and
    those they start from)."""
    heads: set[str] = set()
    needed: set[str] = set()
    held = 0
    for run, points, previous in runs:
        if heads and held + points > STEP_BATCH_POINTS:
            yield heads, needed
            heads, needed, held = set(), set(), 0
        heads.add(run)
        needed |= {run, *previous}
        held += points
    if heads:
        yield heads, needed
