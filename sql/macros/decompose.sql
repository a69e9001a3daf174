-- decompose(pairs): `decompose_points(pairs)`: one row per series on both sides of each pair, the
-- change between them split into what the verdict judges (docs/VERDICTS.md). The pairs of
-- consecutive builds (what version_steps and regressions judge) are read from `fact_build_step`,
-- where publish stored that same decomposition; the others are computed from the points.
-- reads: decompose_points, fact_build_step
create or replace macro decompose(pairs) as table
with wanted as (
    select distinct unnest(pairs) as pair
),
stored as (
    select
        {'base_kind': 'build', 'base_key': s.base_build, 'head_kind': 'build', 'head_key': s.head_build} as pair,
        s.* exclude (base_build, head_build)
    from fact_build_step as s
    semi join wanted as w
        on w.pair.base_kind = 'build'
        and w.pair.head_kind = 'build'
        and s.base_build = w.pair.base_key
        and s.head_build = w.pair.head_key
),
computed as (
    select *
    from decompose_points((
        select list(pair)
        from wanted
        where pair not in (select distinct pair from stored)
    ))
)
select * from stored
union all by name
select * from computed;
