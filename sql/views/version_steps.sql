-- version_steps: each series' builds in release order (`dim_build.build_rank`), each with the
-- previous build that has a point of the series and the judged step from it (`judge`, at the
-- session's `regression_threshold()`): what version_history reads. Of the judged step it carries
-- only the columns version_history shows (a view read whole pays for every column it carries).
-- `point` numbers a series' builds from 1; the first has no step.
-- reads: judge, regression_threshold, series_builds
create or replace view version_steps as
with judged as (
    select
        series_digest,
        pair.head_key as build,
        base_p50,
        head_p50,
        change,
        drift,
        adjusted_change,
        noise,
        z,
        verdict
    from judge([], regression_threshold(), steps := true)
)
select
    o.series_digest,
    o.build,
    o.build_rank,
    o.point,
    o.prev_build,
    j.* exclude (series_digest, build)
from series_builds as o
left join judged as j using (series_digest, build);
