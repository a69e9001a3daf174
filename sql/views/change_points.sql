-- change_points: one row per change point found in a series' gh-pages run history.
--
-- Computed by the `fact_change_point` Dagster asset with Apache Otava's e-divisive means
-- (the `method` column gives the version and parameters) over the points of `run_history`:
-- series with at least 10 runs. `run` is the first run after the shift (the revision where it
-- happened), `prev_run` the last one before it; the medians are of p50 over the segments
-- between neighbouring change points. `verdict` reads the shift like `regressions` does.
-- reads: dim_build, dim_series, fact_change_point, fact_run_point, lower_is_better, revision_labels
create or replace view change_points as
select
    s.series_digest,
    s.kernel,
    s.mode,
    s.provider,
    s.backend,
    s.metric,
    s.unit,
    s.gpu,
    s.architecture,
    s.workload,
    s.x_name,
    s.x_value,
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
join dim_series as s using (series_digest)
join revision_labels as r on r.revision_digest = c.revision_digest
join revision_labels as prev on prev.revision_digest = c.previous_revision_digest
-- The Liger version of the series in each run named: that of the build its point there stands
-- for. Looked up per change point, not for every run point first, so that a filter on the
-- series narrows these joins too (docs/PERFORMANCE.md, "The 10^7 warehouse end to end").
left join fact_run_point as after_point on after_point.series_digest = c.series_digest and after_point.run = r.run
left join dim_build as after_version on after_version.build = after_point.build
left join fact_run_point as before_point on before_point.series_digest = c.series_digest and before_point.run = prev.run
left join dim_build as before_version on before_version.build = before_point.build;
