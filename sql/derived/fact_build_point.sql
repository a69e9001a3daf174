-- fact_build_point: one row per series and build (see `dim_build`) with a point in it: what
-- stands for the series in that build. Materialized at publish (a derived table, recreated whole in the publishing transaction).
--
-- A build stands on all of its runs (several runs of one release commit, a nightly's one run)
-- or, for a series none of them holds, on the main-branch (or imported) rows of its version:
-- p20/p50/p80 are the medians over those points, `runs` counts them and `sources` names them
-- (runs, or the short commit that first showed a main-branch row).
-- reads: fact_result, fact_run_point, result_build
with point as (
    select p.build, p.series_digest, true as from_run, p.run as source_label, p.p20, p.p50, p.p80, p.observed_at
    from fact_run_point as p
    union all
    select b.build, f.series_digest, false, b.source_label, f.p20, f.p50, f.p80, f.observed_at
    from fact_result as f
    join result_build as b using (result_digest)
    where f.source <> 'gh-pages'
),
-- A build stands on its runs where it has any for the series, else on its other rows.
basis as (
    select build, series_digest, bool_or(from_run) as from_run
    from point
    group by build, series_digest
)
select
    p.build,
    p.series_digest,
    median(p.p20) as p20,
    median(p.p50) as p50,
    median(p.p80) as p80,
    count(*) as runs,
    list(distinct p.source_label order by p.source_label) as sources,
    max(p.observed_at) as observed_at
from point as p
semi join basis as b using (build, series_digest, from_run)
group by p.build, p.series_digest
order by build, series_digest;
