"""The gh-pages runs whose rows a per-run derived table (``fact_run_step``, ``fact_recent_point``)
derives, in batches, each with the runs its rows need.

Such a table's rows for a run read the run's points and those of the runs before it that hold
the same series, up to ``reach`` of them per series: one for a run step (the run before),
``recent_runs - 1`` for a recent level. So the rows of a batch of runs need only the run points
of those runs and of the runs they reach back to. Whole, at 10^7 results, the run steps ran out
of DuckDB's 1 GB limit after spilling 39 GB, and so did the busiest GPU's series alone (6.3M
steps); a batch at a time, each query holds about ``BATCH_POINTS`` run points.

Which runs each run reaches back to is itself a window over every run point (``runs_reaching``).
A refresh that appends runs after every run it carries asks only for the appended runs
(``appended_reaching``): the latest runs before them that hold each of their series, looked up
once per refresh for both tables. When the appended runs are all new, those are the runs the
published ``series_latest_runs`` names for each series (``appended_latest_held``: one row per
series); when one of them was published before (a run benchmarked again), a top-n per series
over every other run point (``appended_latest``; at 1,000 revisions 0.6-0.9 s, against 4.9-7.3 s
per table for the window).
``fact_speedup_step`` reaches back per pairing, not per series: its look-up (``pairings_latest``)
reads each pairing's newest run from the published ``fact_speedup_spread`` when the appended runs
are all new, else from every published step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import duckdb
import pyarrow as pa

# Run points of the runs a batch derives (a run with more is a batch of its own).
BATCH_POINTS = 1_000_000


def runs_reaching(reach: int) -> str:
    """Each gh-pages run in upstream's order, with its run points and the runs before it that
    its series' rows reach back to: for each series, the ``reach`` runs before this one that hold
    it (in the order `fact_run_step` and `fact_recent_point` give a series' runs)."""
    return f"""
    with ordered as (
        select
            p.run,
            r.seq,
            list(p.run) over (
                partition by p.series_digest order by r.seq, p.run rows between {int(reach)} preceding and 1 preceding
            ) as earlier
        from fact_run_point as p
        join dim_upstream_revision as r on r.source = 'gh-pages' and r.run = p.run
    )
    select run, count(*) as points, list_distinct(flatten(list(earlier))) as earlier
    from ordered
    group by run
    order by min(seq), run
    """


# Each gh-pages run's place in upstream's list (a run listed twice: its first place).
RUN_SEQ = "select run, seq from gh_pages_runs()"


def appended_latest(reach: int) -> str:
    """For the runs of ``appended_run`` (which come after every other run with points), one row
    per run and series it holds: the ``reach`` latest other runs that hold the series, newest
    first (none for a new series)."""
    return f"""
    with run_seq as ({RUN_SEQ}),
    head as (
        select run, series_digest
        from fact_run_point
        where run in (select run from appended_run)
    ),
    latest as (
        select p.series_digest, max_by(p.run, (s.seq, p.run), {int(reach)}) as runs
        from fact_run_point as p
        join run_seq as s using (run)
        where p.run not in (select run from appended_run)
            and p.series_digest in (select series_digest from head)
        group by p.series_digest
    )
    select h.run, coalesce(l.runs, []) as runs
    from head as h
    left join latest as l using (series_digest)
    """


def appended_latest_held(held: str) -> str:
    """``appended_latest``'s rows read from ``held`` (a select of the published
    ``series_latest_runs``), for appended runs that are all new: a series' newest runs before them
    are then its newest runs in the published generation, ``verdict_rule().recent_runs`` of them,
    more than either per-run table reaches back."""
    return f"""
    select h.run, coalesce(l.runs, []) as runs
    from fact_run_point as h
    left join ({held}) as l using (series_digest)
    where h.run in (select run from appended_run)
    """


def register_appended(con: duckdb.DuckDBPyConnection, appended: list[str]) -> None:
    """The runs ``appended`` as the table ``appended_run`` that the look-ups here read."""
    con.register("appended_run", pa.table({"run": pa.array(appended, pa.string())}))


def appended_series(con: duckdb.DuckDBPyConnection, appended: list[str]) -> None:
    """The runs ``appended`` as the table ``appended_run``, and the series they hold as the temp
    table ``appended_series``."""
    register_appended(con, appended)
    con.execute(
        "create or replace temp table appended_series as select distinct series_digest "
        "from fact_run_point where run in (select run from appended_run)"
    )


def held_runs(con: duckdb.DuckDBPyConnection, held: str) -> set[str]:
    """The runs that ``held`` (a select of the published ``series_latest_runs``) names for the
    series of ``appended_series``."""
    rows = con.execute(
        f"select distinct unnest(runs) from ({held}) where series_digest in (select series_digest from appended_series)"
    ).fetchall()
    return {run for (run,) in rows}


def appended_reaching(reach: int) -> str:
    """Each run of ``appended_run`` with its run points and the runs to read with them, from the
    rows of ``appended_latest`` (of at least ``reach`` runs) in the table of that name: the
    ``reach`` latest other runs that hold each of its series, and the appended runs. That holds
    every run ``runs_reaching`` gives them (a series' latest holders before the appended runs
    are the ones its rows reach back to); a run it adds holds only series whose nearer holders
    are there too, so a series' rows see the same runs before them."""
    return f"""
    select
        run,
        count(*) as points,
        list_distinct(flatten(list(runs[1:{int(reach)}]))) || (select list(run) from appended_run) as earlier
    from appended_latest
    group by run
    order by run
    """


def pairings_latest(con: duckdb.DuckDBPyConnection, appended: list[str], latest: str) -> set[str]:
    """For the runs ``appended`` (which come after every other run with points), the last other
    run that holds both series of each pairing of a Liger series they hold: the runs a pairing's
    step into an appended run reaches back to, however far. ``latest`` says where it is read
    (``held_pairing_runs`` or ``stepped_pairing_runs``). Their series are left in the temp table
    ``appended_series``."""
    appended_series(con, appended)
    return {run for (run,) in con.execute(latest).fetchall()}


def held_pairing_runs(spreads: str) -> str:
    """Each pairing's newest run as ``spreads`` (a select of the published
    ``fact_speedup_spread``) holds it: when the appended runs are all new, the published runs
    keep their places, so that is the last run before them that holds both series."""
    return f"""
    select distinct last_run
    from ({spreads})
    where liger_series_digest in (select series_digest from appended_series)
    """


def stepped_pairing_runs(steps: str) -> str:
    """Each pairing's newest head run in ``steps`` (a select of the published
    ``fact_speedup_step``) other than the appended runs, in the places the runs have now: when an
    appended run was published before (relabelled, or listed anew), the order may have moved, and
    its own published steps name it, not the run before it."""
    return f"""
    with run_seq as ({RUN_SEQ})
    select distinct max_by(s.head_run, (r.seq, s.head_run))
    from ({steps}) as s
    join run_seq as r on r.run = s.head_run
    where s.liger_series_digest in (select series_digest from appended_series)
        and s.head_run not in (select run from appended_run)
    group by s.liger_series_digest, s.baseline_series_digest
    """


def run_batches(runs: Iterable[tuple[str, int, list[str]]]) -> Iterator[tuple[set[str], set[str]]]:
    """``runs`` (rows of ``runs_reaching``) in batches of at most ``BATCH_POINTS`` run points:
    the runs whose rows a batch derives, and the runs those rows need (their own and those they
    reach back to)."""
    heads: set[str] = set()
    needed: set[str] = set()
    held = 0
    for run, points, earlier in runs:
        if heads and held + points > BATCH_POINTS:
            yield heads, needed
            heads, needed, held = set(), set(), 0
        heads.add(run)
        needed |= {run, *earlier}
        held += points
    if heads:
        yield heads, needed
