-- version_points: one row per series and build (see `dim_build`) with a point in it: what stands
-- for the series in that build.
--
-- A release build stands on its runs (the median of the release run and other runs of its
-- commit) or, for a series they lack, on the main-branch rows of its version; a nightly on its
-- run. `runs` counts the points and `sources` names them.
-- reads: dim_build, dim_series, fact_build_point
create or replace view version_points as
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
    s.config_json,
    b.build,
    b.liger_version,
    b.build_kind,
    b.build_rank,
    b.version_rank,
    p.p20,
    p.p50,
    p.p80,
    p.runs,
    p.sources,
    p.observed_at
from fact_build_point as p
join dim_build as b using (build)
join dim_series as s using (series_digest);
