-- decompose(pairs [, steps := false]): `decompose_points(pairs)`: one row per series on both
-- sides of each pair, the change between them split into what the verdict judges
-- (docs/VERDICTS.md). Pairs of builds consecutive for some series are read from
-- `fact_build_step`, where publish stored that same decomposition; the others are computed from
-- the points. With `steps := true`, also every series' own steps (the rows of `fact_build_step`
-- between a series' consecutive builds): what version_steps and regressions judge, in one scan.
-- `head_point` numbers such a step's head among its series' builds; null on the other rows.
-- reads: decompose_points, fact_build_step
create or replace macro decompose(pairs, steps := false) as table
with wanted as (
    select distinct unnest(pairs) as pair
),
asked as (
    select s.*
    from fact_build_step as s
    semi join wanted as w
        on w.pair.base_kind = 'build'
        and w.pair.head_kind = 'build'
        and s.base_build = w.pair.base_key
        and s.head_build = w.pair.head_key
),
stored as (
    select
        {'base_kind': 'build', 'base_key': s.base_build, 'head_kind': 'build', 'head_key': s.head_build} as pair,
        s.* exclude (base_build, head_build, consecutive)
    from (
        select * from asked
        union all
        select * from fact_build_step where steps and consecutive
    ) as s
),
computed as (
    select *
    from decompose_points((
        select list(pair)
        from wanted
        where pair not in (
            select distinct {'base_kind': 'build', 'base_key': base_build, 'head_kind': 'build', 'head_key': head_build}
            from asked
        )
    ))
)
select * from stored
union all by name
select * from computed;
