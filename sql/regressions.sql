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
-- The steps of `version_history`, computed the same way on fact_result's narrow columns; the
-- dimensions are joined once, to the steps only.
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
        v.version_rank,
        f.p20,
        f.p50,
        f.p80,
        f.observed_at,
        f.source,
        f.first_revision_digest
    from version_standing as s
    join fact_result as f using (result_digest)
    left join dim_version as v on v.liger_version = f.liger_version
),
ordered as (
    select
        *,
        lag(liger_version) over series_order as prev_version,
        lag(p20) over series_order as prev_p20,
        lag(p50) over series_order as prev_p50,
        lag(p80) over series_order as prev_p80,
        lag(first_revision_digest) over series_order as prev_revision_digest
    from points
    window series_order as (partition by series_digest order by version_rank)
),
steps as (
    select *
    from ordered
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
