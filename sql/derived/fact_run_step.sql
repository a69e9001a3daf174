-- fact_run_step: one row per series and pair of consecutive gh-pages runs that hold it (in
-- upstream's commits.txt order), with the change decomposed as `decompose_points` does: the
-- history each series' noise is read from (`fact_series_noise`), served by the `run_steps` view.
-- The pair is kept as its two runs (`base_run`, `head_run`).
--
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: decompose_points, dim_upstream_revision, fact_run_point
with run_seq as (
    select run, seq
    from dim_upstream_revision
    where source = 'gh-pages'
),
ordered as (
    select
        p.series_digest,
        p.run,
        -- runs sharing a place in upstream's list (one inserted later) in name order
        lag(p.run) over (partition by p.series_digest order by r.seq, p.run) as prev_run
    from fact_run_point as p
    join run_seq as r using (run)
),
steps as (
    select distinct prev_run, run
    from ordered
    where prev_run is not null
)
select
    d.pair.base_key as base_run,
    d.pair.head_key as head_run,
    d.* exclude (pair)
from decompose_points((
    select list({'base_kind': 'run', 'base_key': prev_run, 'head_kind': 'run', 'head_key': run})
    from steps
)) as d
semi join ordered as o
    on o.series_digest = d.series_digest and o.prev_run = d.pair.base_key and o.run = d.pair.head_key
order by head_run, series_digest;
