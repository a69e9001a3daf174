-- version_steps: each series' builds in release order (`dim_build.build_rank`), each with the
-- previous build that has a point of the series and the judged step from it (`judge`, at the
-- session's `regression_threshold()`): what version_history and regressions read.
-- `point` numbers a series' builds from 1; the first has no step.
-- reads: dim_build, fact_build_point, judge, regression_threshold
create or replace view version_steps as
with ordered as (
    select
        p.series_digest,
        p.build,
        b.build_rank,
        row_number() over series_order as point,
        lag(p.build) over series_order as prev_build
    from fact_build_point as p
    join dim_build as b using (build)
    window series_order as (partition by p.series_digest order by b.build_rank)
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
