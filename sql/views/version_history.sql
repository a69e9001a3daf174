-- version_history: one row per series and build, in release order, with the previous build's
-- point, the change and its verdict.
--
-- Release order is semantic (0.5.10 after 0.5.9, 0.7.0rc1 before 0.7.0), each release's
-- nightlies after it (`builds`). `point` numbers a series' builds from 1; the change columns
-- and `verdict` are those of `judge` (docs/VERDICTS.md), null on a series' first build.
-- reads: version_points, version_steps
create or replace view version_history as
select
    p.series_digest,
    p.kernel,
    p.mode,
    p.provider,
    p.backend,
    p.metric,
    p.unit,
    p.gpu,
    p.architecture,
    p.workload,
    p.x_name,
    p.x_value,
    p.config_json,
    s.point,
    p.build,
    p.liger_version,
    p.build_kind,
    p.build_rank,
    p.p20,
    p.p50,
    p.p80,
    p.runs,
    p.sources,
    s.prev_build,
    s.base_p50 as prev_p50,
    s.head_p50 / s.base_p50 as ratio,
    s.change,
    s.drift,
    s.adjusted_change,
    s.noise,
    s.z,
    s.verdict
from version_points as p
join version_steps as s on s.series_digest = p.series_digest and s.build = p.build;
