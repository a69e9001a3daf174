-- fact_build_source: for each source (a gh-pages run, a main-branch CSV, an import), one row per
-- build its results stand for and label they are listed under (`result_build`): how many, where
-- the source's runs of it stand in upstream's list and when they were observed. A view: only
-- `dim_build` reads it, adding these up.
-- reads: result_build
create or replace view fact_build_source as
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
group by source_key, build, source_label, liger_version, build_kind;
