-- fact_speedup_point: one row per pairing of a Liger series with a baseline series and build
-- (see `dim_build`): the speedup that stands for the pairing in that build, which
-- `speedup_history` reads.
--
-- A build stands on its runs where the pairing has any there (a release: its release run and
-- the other runs of its commit; a nightly: its run), else on its other snapshots (the
-- main-branch rows of its version). `speedup`, `liger_p50` and `baseline_p50` are medians over
-- them, `runs` counts them and `sources` names them. A pairing's metric and baseline provider
-- follow from it; they are kept as columns so that a filter on them reads fewer rows.
--
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: fact_speedup_pair, speedup
with placed as (
    select
        liger_series_digest,
        baseline_series_digest,
        metric,
        baseline_provider,
        build,
        source = 'gh-pages' as from_run,
        speedup(unit, liger_p50, baseline_p50) as speedup,
        liger_p50,
        baseline_p50,
        revision
    from fact_speedup_pair
),
-- whether the pairing's point in the build stands on runs (see above)
basis as (
    select liger_series_digest, baseline_series_digest, metric, baseline_provider, build, bool_or(from_run) as from_run
    from placed
    group by all
)
select
    build,
    liger_series_digest,
    baseline_series_digest,
    metric,
    baseline_provider,
    median(speedup) as speedup,
    median(liger_p50) as liger_p50,
    median(baseline_p50) as baseline_p50,
    count(*) as runs,
    list(distinct revision order by revision) as sources
from placed
semi join basis using (liger_series_digest, baseline_series_digest, metric, baseline_provider, build, from_run)
group by all
order by build, liger_series_digest, baseline_series_digest;
