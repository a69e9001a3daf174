-- regressions: one row per pair of consecutive builds of a series (see `dim_build`), with the
-- change, its evidence and a verdict (docs/VERDICTS.md).
--
-- `verdict` is 'regression' or 'improvement' only when the change exceeds the threshold
-- (`regression_threshold()`, 5% unless `set variable regression_threshold = ...`) raw and once
-- the baselines' drift is taken out, and stands out from the series' run-to-run noise;
-- 'unchanged' when a change beyond max(threshold, 25%) is ruled out; else 'inconclusive'.
-- Lower is better for ms and MB. `ratio` is head p50 / base p50.
-- reads: dim_series, judge, regression_threshold
create or replace view regressions as
select
    s.series_digest,
    v.kernel,
    v.mode,
    v.provider,
    v.backend,
    v.metric,
    v.unit,
    v.gpu,
    v.architecture,
    v.workload,
    v.x_name,
    v.x_value,
    s.pair.base_key as base_version,
    s.pair.head_key as head_version,
    s.base_p50,
    s.head_p50,
    s.head_p50 / s.base_p50 as ratio,
    s.change,
    s.drift,
    s.adjusted_change,
    s.sweep_change,
    s.noise,
    s.z,
    s.detectable_change,
    s.verdict,
    s.threshold,
    s.history,
    s.base_runs,
    s.head_runs,
    s.base_sources,
    s.head_sources,
    s.base_p20,
    s.base_p80,
    s.head_p20,
    s.head_p80
from judge([], regression_threshold(), steps := true) as s
join dim_series as v using (series_digest);
