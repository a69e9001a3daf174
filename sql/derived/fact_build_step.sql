-- fact_build_step: one row per series on both sides of each pair of builds that are consecutive
-- for some series (`series_builds`): `decompose_points` of those pairs, stored at publish so that
-- `decompose` (and through it version_steps, version_history, regressions and compare_versions of
-- adjacent builds) reads the split of each change instead of computing its drift medians per query.
-- The pair is kept as its two builds (`base_build`, `head_build`); `decompose` rebuilds `pair`.
--
-- Materialized at publish (a derived table).
-- reads: decompose_points, series_builds
with steps as (
    select distinct prev_build, build
    from series_builds
    where prev_build is not null
)
select
    pair.base_key as base_build,
    pair.head_key as head_build,
    * exclude (pair)
from decompose_points((
    select list({'base_kind': 'build', 'base_key': prev_build, 'head_kind': 'build', 'head_key': build})
    from steps
));
