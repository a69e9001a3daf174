-- run_history: one row per series and gh-pages run, in run order, with the previous run's
-- point and the change. These are the points `change_points` is computed from.
--
-- Run order is upstream's commits.txt order (`revision_seq`). When one run holds several
-- results of a series, the most recently observed one stands for it.
create or replace view run_history as
with points as (
    select *
    from results
    where source = 'gh-pages'
    qualify row_number() over (
        partition by series_digest, revision_seq
        order by observed_at desc, result_digest
    ) = 1
),
ordered as (
    select
        *,
        row_number() over series_order - 1 as point_index,
        count(*) over (partition by series_digest) as points,
        lag(revision) over series_order as prev_revision,
        lag(p50) over series_order as prev_p50
    from points
    window series_order as (partition by series_digest order by revision_seq)
)
select
    series_digest,
    kernel,
    mode,
    provider,
    backend,
    metric,
    unit,
    gpu,
    architecture,
    workload,
    x_name,
    x_value,
    point_index,
    points,
    revision as run,
    revision_seq as run_seq,
    liger_version,
    p20,
    p50,
    p80,
    observed_at,
    prev_revision as prev_run,
    prev_p50,
    p50 / nullif(prev_p50, 0) - 1 as change,
    result_digest
from ordered
order by series_digest, run_seq;
