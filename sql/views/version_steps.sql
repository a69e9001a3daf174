-- version_steps: each series' builds in release order (`dim_build.build_rank`), each with the
-- previous build that has a point of the series and the judged step from it (`judge`, at the
-- session's `regression_threshold()`): what version_history and regressions read.
-- `point` numbers a series' builds from 1; the first has no step.
-- reads: judge, regression_threshold, series_builds
create or replace view version_steps as
with ordered as (
    select *
    from series_builds
),
steps as (
    select distinct prev_build, build
    from ordered
    where prev_build is not null
),
judged as (
    select *
    from judge(
        (select list({'base_kind': 'build', 'base_key': prev_build, 'head_kind': 'build', 'head_key': build}) from steps),
        regression_threshold()
    )
)
select
    o.series_digest,
    o.build,
    o.build_rank,
    o.point,
    o.prev_build,
    j.* exclude (series_digest)
from ordered as o
left join judged as j
    on j.series_digest = o.series_digest and j.pair.base_key = o.prev_build and j.pair.head_key = o.build;
