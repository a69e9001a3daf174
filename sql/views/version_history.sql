-- version_history: one row per series and build, in release order, with the previous build's
-- point, the change and its verdict.
--
-- Release order is semantic (0.5.10 after 0.5.9, 0.7.0rc1 before 0.7.0), each release's
-- nightlies after it (`builds`). `point` numbers a series' builds from 1; the change columns
-- and `verdict` are those of `judge` (docs/VERDICTS.md), null on a series' first build.
-- reads: dim_build, dim_series, regression_threshold, series_history
create or replace view version_history as
select
    h.series_digest,
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
    s.config_json,
    h.point,
    h.build,
    b.liger_version,
    b.build_kind,
    b.build_rank,
    h.p20,
    h.p50,
    h.p80,
    h.runs,
    h.sources,
    h.prev_build,
    h.base_p50 as prev_p50,
    h.p50 / h.base_p50 as ratio,
    h.change,
    h.drift,
    h.adjusted_change,
    h.noise,
    h.z,
    h.verdict
from series_history(regression_threshold()) as h
join dim_build as b using (build)
join dim_series as s using (series_digest);
