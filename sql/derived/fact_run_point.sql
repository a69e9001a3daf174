-- fact_run_point: one row per series and gh-pages run that holds it: the result that stands
-- for the series in that run (the most recently observed one, if the run holds several).
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: dim_upstream_revision, fact_result, result_build
with standing as (
    select
        source_key as run,
        series_digest,
        first(result_digest order by observed_at desc, result_digest) as result_digest
    from fact_result
    where source = 'gh-pages'
    group by source_key, series_digest
)
select
    s.run,
    s.series_digest,
    s.result_digest,
    b.build,
    r.seq as run_seq,
    f.p20,
    f.p50,
    f.p80,
    f.observed_at
from standing as s
join fact_result as f using (result_digest)
join result_build as b using (result_digest)
join dim_upstream_revision as r on r.revision_digest = f.first_revision_digest
order by run, series_digest;
