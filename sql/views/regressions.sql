-- regressions: one row per pair of consecutive builds of a series (see `dim_build`), with the
-- change, its evidence and a verdict (docs/VERDICTS.md).
--
-- `verdict` is 'regression' or 'improvement' only when the change exceeds the threshold
-- (`regression_threshold()`, 5% unless `set variable regression_threshold = ...`) raw and once
-- the baselines' drift is taken out, and stands out from the series' run-to-run noise;
-- 'unchanged' when a change beyond max(threshold, 25%) is ruled out; else 'inconclusive'.
-- Lower is better for ms and MB. `ratio` is head p50 / base p50.
--
-- A flag is confirmed or taken back by the builds after its head (`verdict_rule().confirm_runs`
-- of them that hold the series): `confirmed_by` of the `later_builds` lie beyond the threshold
-- from the base p50 the flag's way; `confirmation` is 'suspected' while none holds the series,
-- 'confirmed' when most agree, else 'retracted' (`confirmation`).
-- reads: comparison, confirmation, dim_build, fact_build_point, regression_threshold, verdict_rule
create or replace view regressions as
with compared as (
    select
        * exclude (base_kind) rename (base as base_version, head as head_version),
        verdict in ('regression', 'improvement', 'changed', 'environment') as is_flag
    from comparison([], regression_threshold(), steps := true)
)
select
    c.* exclude (is_flag),
    if(c.is_flag, l.later_builds, null) as later_builds,
    if(c.is_flag, l.confirmed_by, null) as confirmed_by,
    confirmation(if(c.is_flag, l.later_builds, null), l.confirmed_by) as confirmation
from compared as c
-- a lateral join, not a second reader of `compared`: DuckDB would compute a CTE read twice
-- whole, for every series, whatever filter the caller puts on the view; this way a filter on
-- kernel and GPU reaches the stored steps, and only the flags it keeps look for later builds
left join lateral (
    select
        count(*) filter (where p.p50 > 0) as later_builds,
        count(*) filter (
            where p.p50 > 0
                and abs(ln(p.p50 / c.base_p50)) > ln(1 + c.threshold)
                and sign(ln(p.p50 / c.base_p50)) = sign(c.adjusted_change)
        ) as confirmed_by
    from (
        -- the series' next builds after the head, `verdict_rule().confirm_runs` of them
        select p.p50
        from fact_build_point as p
        join dim_build as b using (build)
        where c.is_flag
            and p.series_digest = c.series_digest
            and b.build_rank > (select build_rank from dim_build where build = c.head_version)
        order by b.build_rank
        limit verdict_rule().confirm_runs
    ) as p
) as l on true;
