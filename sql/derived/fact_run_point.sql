-- fact_run_point: one row per series and gh-pages run that holds it: the result that stands
-- for the series in that run (the most recently observed one, if the run holds several).
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: dim_upstream_revision, fact_result, result_build
-- One window over the joined results, not an aggregate joined back to fact_result: at 2.6 million
-- results that join ran out of the writer's 1 GB, where the window's sort spills to disk.
select
    f.source_key as run,
    f.series_digest,
    f.result_digest,
    b.build,
    r.seq as run_seq,
    f.p20,
    f.p50,
    f.p80,
    f.observed_at
from fact_result as f
join result_build as b using (result_digest)
join dim_upstream_revision as r on r.revision_digest = f.first_revision_digest
where f.source = 'gh-pages'
qualify row_number() over (partition by f.source_key, f.series_digest order by f.observed_at desc, f.result_digest) = 1
order by run, series_digest;
