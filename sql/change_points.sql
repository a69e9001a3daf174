-- change_points: one row per change point found in a series' gh-pages run history.
--
-- Computed by the `fact_change_point` Dagster asset with Apache Otava's e-divisive means
-- (the `method` column gives the version and parameters) over the points of `run_history`:
-- series with at least 10 runs. `run` is the first run after the shift (the revision where it
-- happened), `prev_run` the last one before it; the medians are of p50 over the segments
-- between neighbouring change points. `verdict` reads the shift like `regressions` does.
create or replace view change_points as
with revision as (
    select revision_digest, coalesce(run, commit) as label, seq
    from dim_upstream_revision
),
-- Every result of a series has the same protocol, workload, GPU, provider and backend: any one
-- of them names the series. Only the series that have a change point are looked up.
series as (
    select
        series_digest,
        any_value(protocol_digest) as protocol_digest,
        any_value(workload_digest) as workload_digest,
        any_value(environment_digest) as environment_digest,
        any_value(implementation_digest) as implementation_digest,
        any_value(metric) as metric,
        any_value(unit) as unit
    from fact_result
    where series_digest in (select series_digest from fact_change_point)
    group by series_digest
),
-- The runs a change point names, before and after the shift, each with its series.
named_run as (
    select series_digest, revision_digest from fact_change_point
    union
    select series_digest, previous_revision_digest from fact_change_point
),
at_run as (
    select
        f.series_digest,
        f.first_revision_digest as revision_digest,
        arg_max(f.liger_version, f.observed_at) as liger_version
    from fact_result as f
    semi join named_run as n
        on n.series_digest = f.series_digest and n.revision_digest = f.first_revision_digest
    where f.source = 'gh-pages'
    group by all
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
    r.label as run,
    r.seq as run_seq,
    prev.label as prev_run,
    before_version.liger_version as prev_version,
    after_version.liger_version as liger_version,
    c.before_median,
    c.after_median,
    c.after_median / nullif(c.before_median, 0) as ratio,
    c.after_median / nullif(c.before_median, 0) - 1 as change,
    case
        when lower_is_better(s.unit) is null then 'changed'
        when (c.after_median > c.before_median) = lower_is_better(s.unit) then 'regression'
        else 'improvement'
    end as verdict,
    c.pvalue,
    c.point_index,
    c.points,
    c.before_points,
    c.after_points,
    c.method
from fact_change_point as c
join series as s using (series_digest)
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
join revision as r on r.revision_digest = c.revision_digest
join revision as prev on prev.revision_digest = c.previous_revision_digest
left join at_run as after_version
    on after_version.series_digest = c.series_digest and after_version.revision_digest = c.revision_digest
left join at_run as before_version
    on before_version.series_digest = c.series_digest and before_version.revision_digest = c.previous_revision_digest
order by w.kernel, p.timed_pass, i.provider, s.metric, e.gpu_name, w.slug, r.seq;
