-- versions: one row per Liger version, with what the warehouse holds for it. `version_rank` is
-- semantic release order (0.5.10 after 0.5.9, pre-releases before their release).
--
-- The counts are of the results that stand for its builds (`result_build`): a withdrawn
-- import's results are history only (`results`, `restatements`), and a version only they
-- showed is not listed (`dim_version`).
-- `release_runs` are the gh-pages runs upstream named `<commit>-v<version>` for it.
-- reads: dim_upstream_revision, dim_version, result_build, results, version_text
create or replace view versions as
with held as (
    select
        liger_version,
        count(*) as results,
        count(*) filter (where is_current) as current_results,
        count(distinct series_digest) as series,
        count(distinct source_key) filter (where source = 'gh-pages') as gh_pages_runs,
        list_sort(list(distinct gpu)) as gpus,
        min(observed_at) as first_observed,
        max(observed_at) as last_observed
    from results
    semi join result_build using (result_digest)
    group by liger_version
),
releases as (
    select release_version, list(run order by seq) as release_runs
    from dim_upstream_revision
    where release_version is not null
    group by release_version
)
select
    v.version_rank,
    v.liger_version,
    v.is_prerelease,
    coalesce(h.results, 0) as results,
    coalesce(h.current_results, 0) as current_results,
    coalesce(h.series, 0) as series,
    coalesce(h.gh_pages_runs, 0) as gh_pages_runs,
    h.gpus,
    h.first_observed,
    h.last_observed,
    r.release_runs
from dim_version as v
left join held as h using (liger_version)
left join releases as r on version_text(r.release_version) = v.liger_version;
