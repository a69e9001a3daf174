-- version_history: one row per series and version point, in release order, with the previous
-- point and the change.
--
-- Release order is semantic (`dim_version.version_rank`: 0.5.10 after 0.5.9, 0.7.0rc1 before
-- 0.7.0). `point` numbers a series' versions from 1; `ratio` is p50 / previous p50 and
-- `change` the same as a fraction (0.10 = 10% higher).
create or replace view version_history as
with revision as (
    select revision_digest, coalesce(run, commit) as label
    from dim_upstream_revision
),
ordered as (
    select * from version_steps
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
    w.config_json,
    o.point,
    o.liger_version,
    o.version_rank,
    o.p20,
    o.p50,
    o.p80,
    o.observed_at,
    o.source,
    r.label as revision,
    o.version_results,
    o.prev_version,
    o.prev_p20,
    o.prev_p50,
    o.prev_p80,
    prev.label as prev_revision,
    o.p50 / nullif(o.prev_p50, 0) as ratio,
    o.p50 / nullif(o.prev_p50, 0) - 1 as change,
    o.result_digest
from ordered as o
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
left join revision as r on r.revision_digest = o.first_revision_digest
left join revision as prev on prev.revision_digest = o.prev_revision_digest
order by o.series_digest, o.version_rank;
