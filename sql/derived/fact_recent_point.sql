-- fact_recent_point: one row per series and gh-pages run that holds it: the series' recent
-- level at that run, the median p20/p50/p80 over that run and the runs before it that hold the
-- series (in upstream's commits.txt order), `verdict_rule().recent_runs` of them at most, how
-- many (`runs`) and which (`sources`). `compare_runs` judges a head against the base run's
-- recent level as well as against the base run, so that one unlucky base run cannot make a
-- verdict (docs/VERDICTS.md).
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: dim_upstream_revision, fact_run_point, verdict_rule
with ordered as (
    select p.run, p.series_digest, p.p20, p.p50, p.p80, p.observed_at, r.seq
    from fact_run_point as p
    join dim_upstream_revision as r on r.source = 'gh-pages' and r.run = p.run
)
select
    run,
    series_digest,
    median(p20) over recent as p20,
    median(p50) over recent as p50,
    median(p80) over recent as p80,
    count(*) over recent as runs,
    list_sort(list(run) over recent) as sources,
    max(observed_at) over recent as observed_at
from ordered
window recent as (
    partition by series_digest
    order by seq, run  -- runs sharing a place in upstream's list in name order, as fact_run_step
    rows between verdict_rule().recent_runs - 1 preceding and current row
)
order by run, series_digest;
