-- result_build: one row per result, with the build it stands for (see `builds`).
--
-- A gh-pages result stands for its version's release build when its run is a release run of
-- that version or another run of the same commit, else for the nightly build of its run.
-- A main-branch or imported result stands for the release build of its version. A withdrawn
-- import (`liger-warehouse import withdraw`: none of its revisions is head) stands for no build:
-- its results are history only (`restatements`), so no build, point or verdict reads them.
-- `source_label` is what `base_sources`/`head_sources` list: the run, or the short commit of
-- the main-branch revision that first showed the result.
-- reads: dim_upstream_revision, fact_result
create or replace view result_build as
with revision as (
    select
        revision_digest,
        source,
        run,
        seq,
        coalesce(run, left(commit, 7)) as label,
        split_part(run, '-', 1) as run_commit
    from dim_upstream_revision
),
release_commit as (
    select distinct split_part(run, '-', 1) as run_commit, release_version
    from dim_upstream_revision
    where release_version is not null
),
withdrawn_import as (
    select source_key
    from dim_upstream_revision
    where source = 'import'
    group by source_key
    having not bool_or(is_head)
),
-- A nightly is labelled by the day its run was first observed.
run_day as (
    select first_revision_digest as revision_digest, strftime(min(observed_at), '%Y%m%d') as day
    from fact_result
    where source = 'gh-pages'
    group by first_revision_digest
)
select
    f.result_digest,
    f.series_digest,
    f.source_key,
    f.liger_version,
    case
        when f.source <> 'gh-pages' or rc.run_commit is not null then f.liger_version
        else f.liger_version || '+' || d.day || '.' || r.run_commit
    end as build,
    case when f.source <> 'gh-pages' or rc.run_commit is not null then 'release' else 'nightly' end as build_kind,
    f.source,
    r.label as source_label,
    case when f.source = 'gh-pages' then r.seq end as run_seq,
    f.observed_at
from fact_result as f
join revision as r on r.revision_digest = f.first_revision_digest
left join release_commit as rc on rc.run_commit = r.run_commit and rc.release_version = f.liger_version
left join run_day as d on d.revision_digest = f.first_revision_digest
where f.source_key not in (select source_key from withdrawn_import);
