-- regressions: one row per pair of consecutive version points of a series, with a verdict.
--
-- `verdict` is 'regression' or 'improvement' only when p50 moved by more than the threshold
-- (`regression_threshold()`, 5% unless `set variable regression_threshold = ...`) AND the
-- base and head p20-p80 bands do not overlap; otherwise 'unchanged'. Lower is better for ms
-- and MB. `ratio` is head p50 / base p50.
create or replace view regressions as
with settings as (
    select regression_threshold() as threshold
),
revision as (
    select revision_digest, coalesce(run, commit) as label
    from dim_upstream_revision
),
steps as (
    select *
    from version_steps
    where prev_version is not null
)
select
    s.series_digest,
    w.kernel,
    p.timed_pass as mode,
    i.provider,
    i.backend,
    s.metric,
    s.unit,
    e.gpu_name as gpu,
    e.architecture,
    w.slug as workload,
    w.x_name,
    w.x_value,
    s.prev_version as base_version,
    s.liger_version as head_version,
    s.prev_p50 as base_p50,
    s.p50 as head_p50,
    s.p50 / nullif(s.prev_p50, 0) as ratio,
    s.p50 / nullif(s.prev_p50, 0) - 1 as change,
    verdict(s.prev_p20, s.prev_p50, s.prev_p80, s.p20, s.p50, s.p80, s.unit, t.threshold) as verdict,
    t.threshold,
    s.prev_p20 as base_p20,
    s.prev_p80 as base_p80,
    s.p20 as head_p20,
    s.p80 as head_p80,
    prev.label as base_revision,
    r.label as head_revision
from steps as s
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
left join revision as r on r.revision_digest = s.first_revision_digest
left join revision as prev on prev.revision_digest = s.prev_revision_digest
cross join settings as t
order by s.series_digest, s.version_rank;
