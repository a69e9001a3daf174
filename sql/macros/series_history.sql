-- series_history(threshold): one row per series and build with a point of it (`fact_build_point`),
-- numbered from 1 in release order (`point`, as `series_builds` numbers them), with the build
-- before (`prev_build`), the point (p20, p50, p80, runs, sources) and the judged step from the
-- build before (`judge`: base_p50, head_p50, change ... verdict; null on a series' first build):
-- what version_steps and version_history read.
--
-- It reads each series' steps as `fact_build_step` stores them, each with its head's point and
-- number (`head_point`), and adds the builds no step leads into: each series' first, and a build
-- whose step was not judged because a p50 on either side is not positive (`decompose_points`),
-- numbered for those series alone. So no query numbers every point or joins every point to its
-- step, which at 10^7 points spills both to disk.
-- reads: dim_build, fact_build_point, judge, judgeable
create or replace macro series_history(threshold) as table
with step as (
    select
        series_digest,
        pair.head_key as build,
        head_point as point,
        pair.base_key as prev_build,
        head_p20 as p20,
        head_p50 as p50,
        head_p80 as p80,
        head_runs as runs,
        head_sources as sources,
        base_p50,
        head_p50,
        change,
        drift,
        adjusted_change,
        noise,
        z,
        verdict
    from judge([], threshold, steps := true)
),
first_build as (
    select series_digest, arg_min(p.build, b.build_rank) as build
    from fact_build_point as p
    join dim_build as b using (build)
    group by series_digest
),
first_point as (
    select series_digest, build, 1 as point, null as prev_build, p20, p50, p80, runs, sources
    from fact_build_point
    semi join first_build using (series_digest, build)
),
-- Series with a point whose p50 is not positive: a step into or out of it is not judged.
unjudged_series as (
    select distinct series_digest
    from fact_build_point
    where not judgeable(p50)
),
unjudged_series_point as (
    select
        p.*,
        row_number() over series_order as point,
        lag(p.build) over series_order as prev_build,
        lag(p.p50) over series_order as prev_p50
    from (select * from fact_build_point semi join unjudged_series using (series_digest)) as p
    join dim_build as b using (build)
    window series_order as (partition by p.series_digest order by b.build_rank)
),
unjudged_point as (
    select series_digest, build, point, prev_build, p20, p50, p80, runs, sources
    from unjudged_series_point
    where point > 1 and not (judgeable(p50) and judgeable(prev_p50))
)
select * from step
union all by name
select * from first_point
union all by name
select * from unjudged_point;
