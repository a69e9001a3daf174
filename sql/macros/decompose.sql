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
    select *
    from fact_build_step
    where pair in (select pair from wanted where pair.base_kind = 'build' and pair.head_kind = 'build')
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
