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
    select * exclude (base_kind) rename (base as base_version, head as head_version)
    from comparison([], regression_threshold(), steps := true)
),
placed as (
    select
        p.series_digest,
        p.build,
        p.p50,
        row_number() over (partition by p.series_digest order by b.build_rank) as place
    from fact_build_point as p
    join dim_build as b using (build)
),
later as (
    select
        c.series_digest,
        c.head_version,
        count(l.p50) as later_builds,
        count(l.p50) filter (
            where abs(ln(l.p50 / c.base_p50)) > ln(1 + c.threshold) and sign(ln(l.p50 / c.base_p50)) = sign(c.adjusted_change)
        ) as confirmed_by
    from compared as c
    join placed as h on h.series_digest = c.series_digest and h.build = c.head_version
    left join placed as l
        on l.series_digest = c.series_digest
        and l.place > h.place
        and l.place <= h.place + verdict_rule().confirm_runs
        and l.p50 > 0
    where c.verdict in ('regression', 'improvement', 'changed', 'environment')
    group by c.series_digest, c.head_version
)
select
    c.*,
    l.later_builds,
    l.confirmed_by,
    confirmation(l.later_builds, l.confirmed_by) as confirmation
from compared as c
left join later as l using (series_digest, head_version);
