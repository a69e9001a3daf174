-- fact_build_source: for each source (a gh-pages run, a main-branch CSV, an import), one row per
-- build its results stand for and label they are listed under (`result_build`): how many, where
-- the source's runs of it stand in upstream's list and when they were observed. Materialized at
-- publish (a derived table, one part per source, named by the source's inputs): `dim_build` adds
-- these up, so a refresh reads the results of the sources it changed, not every result.
-- reads: result_build
select
    source_key,
    build,
    source_label,
    liger_version,
    build_kind,
    min(run_seq) as first_run_seq,
    max(run_seq) as last_run_seq,
    min(observed_at) as first_observed,
    max(observed_at) as last_observed,
    count(*) as results
from result_build
group by source_key, build, source_label, liger_version, build_kind
order by source_key, build, source_label;
