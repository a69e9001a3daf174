-- fact_build_step: one row per series on both sides of each pair of builds that are consecutive
-- for some series (`series_builds`): `decompose_points` of those pairs, stored at publish so that
-- `decompose` (and through it version_steps, version_history, regressions and compare_versions of
-- adjacent builds) reads the split of each change instead of computing its drift medians per query.
-- The pair is kept as its two builds (`base_build`, `head_build`); `decompose` rebuilds `pair`.
-- `consecutive` says whether `base_build` is the series' own build before `head_build` (the step
-- regressions judge), not only a build both hold with others of the series between them; on those
-- rows `head_point` is `head_build`'s number among the series' builds (`series_builds.point`), so
-- that version_steps and version_history read each series' steps without numbering its builds.
--
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: decompose_points, series_builds
with series_step as materialized (
    select series_digest, prev_build, build, point
    from series_builds
    where prev_build is not null
),
steps as (
    select distinct prev_build, build
    from series_step
)
select
    d.pair.base_key as base_build,
    d.pair.head_key as head_build,
    d.* exclude (pair),
    s.series_digest is not null as consecutive,
    s.point as head_point
from decompose_points((
    select list({'base_kind': 'build', 'base_key': prev_build, 'head_kind': 'build', 'head_key': build})
    from steps
)) as d
left join series_step as s
    on s.series_digest = d.series_digest and s.prev_build = d.pair.base_key and s.build = d.pair.head_key
order by head_build, base_build, series_digest;
