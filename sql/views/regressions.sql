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
-- reads: comparison, confirmation, confirms, dim_build, fact_build_point, is_flag, regression_threshold, verdict_rule
create or replace view regressions as
select
    c.* exclude (base_kind) rename (base as base_version, head as head_version),
    l.later_builds,
    l.confirmed_by,
    confirmation(l.later_builds, l.confirmed_by) as confirmation
from comparison([], regression_threshold(), steps := true) as c
-- a lateral join, not a second reader of the comparison: DuckDB would compute a CTE read twice
-- whole, for every series, whatever filter the caller puts on the view; this way a filter on
-- kernel and GPU reaches the stored steps, and only the flags it keeps look for later builds
left join lateral (
    -- one row for every row of the comparison (an aggregate), NULLs on a row that is no flag
    select
        if(is_flag(c.verdict), count(*) filter (where p.p50 > 0), null) as later_builds,
        if(
            is_flag(c.verdict),
            count(*) filter (where p.p50 > 0 and confirms(p.p50, c.base_p50, c.threshold, c.adjusted_change)),
            null
        ) as confirmed_by
    from (
        -- the series' next builds after the head, `verdict_rule().confirm_runs` of them
        select p.p50
        from fact_build_point as p
        join dim_build as b using (build)
        where is_flag(c.verdict)
            and p.series_digest = c.series_digest
            and b.build_rank > (select build_rank from dim_build where build = c.head)
        order by b.build_rank
        limit verdict_rule().confirm_runs
    ) as p
) as l on true;
