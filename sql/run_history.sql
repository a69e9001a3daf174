-- run_history: one row per series and gh-pages run, in run order, with the previous run's
-- point and the change. These are the points `change_points` is computed from.
--
-- Run order is upstream's commits.txt order (`revision_seq`). When one run holds several
-- results of a series, the most recently observed one stands for it.
create or replace view run_history as
with revision as (
    select revision_digest, coalesce(run, commit) as label, seq
    from dim_upstream_revision
),
-- Where each gh-pages result sits: its series and its run's place in upstream's order.
placed as (
    select f.result_digest, f.series_digest, f.observed_at, r.seq as revision_seq
    from fact_result as f
    left join revision as r on r.revision_digest = f.first_revision_digest
    where f.source = 'gh-pages'
),
-- Nearly every run holds one result of a series: rank only the (series, run) pairs that hold
-- several, to leave out the results that are not the most recently observed one.
crowded as (
    select series_digest, revision_seq
    from placed
    group by series_digest, revision_seq
    having count(*) > 1
),
outranked as (
    select p.result_digest
    from placed as p
    semi join crowded as c
        on c.series_digest = p.series_digest and c.revision_seq is not distinct from p.revision_seq
    qualify row_number() over (
        partition by p.series_digest, p.revision_seq
        order by p.observed_at desc, p.result_digest
    ) > 1
),
-- The points, in fact_result's columns: the dimensions are joined once, at the end.
points as (
    select
        f.result_digest,
        f.series_digest,
        f.protocol_digest,
        f.workload_digest,
        f.environment_digest,
        f.implementation_digest,
        f.metric,
        f.unit,
        f.liger_version,
        f.p20,
        f.p50,
        f.p80,
        f.observed_at,
        r.label as revision,
        r.seq as revision_seq
    from fact_result as f
    left join revision as r on r.revision_digest = f.first_revision_digest
    anti join outranked as o on o.result_digest = f.result_digest
    where f.source = 'gh-pages'
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
    o.series_digest,
    w.kernel,
    p.timed_pass as mode,
    i.provider,
    i.backend,
    o.metric,
    o.unit,
    e.gpu_name as gpu,
    e.architecture,
    w.slug as workload,
    w.x_name,
    w.x_value,
    o.point_index,
    o.points,
    o.revision as run,
    o.revision_seq as run_seq,
    o.liger_version,
    o.p20,
    o.p50,
    o.p80,
    o.observed_at,
    o.prev_revision as prev_run,
    o.prev_p50,
    o.p50 / nullif(o.prev_p50, 0) - 1 as change,
    o.result_digest
from ordered as o
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
order by o.series_digest, o.revision_seq;
