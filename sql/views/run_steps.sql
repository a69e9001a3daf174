-- run_steps: one row per series and pair of consecutive gh-pages runs that hold it (in
-- upstream's commits.txt order), with the change decomposed as `decompose_points` does. This is the
-- history each series' noise is read from (`series_noise`).
-- reads: decompose_points, dim_upstream_revision, side_points
create or replace view run_steps as
with run_seq as (
    select run, seq
    from dim_upstream_revision
    where source = 'gh-pages'
),
ordered as (
    select
        p.series_digest,
        p.side_key as run,
        lag(p.side_key) over (partition by p.series_digest order by r.seq) as prev_run
    from side_points as p
    join run_seq as r on r.run = p.side_key
    where p.side_kind = 'run'
),
steps as (
    select distinct prev_run, run
    from ordered
    where prev_run is not null
)
select d.*
from decompose_points((
    select list({'base_kind': 'run', 'base_key': prev_run, 'head_kind': 'run', 'head_key': run})
    from steps
)) as d
semi join ordered as o
    on o.series_digest = d.series_digest and o.prev_run = d.pair.base_key and o.run = d.pair.head_key;
