-- dim_build: one row per Liger build that results stand for, in release order.
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
--
-- A *release* build is a published version (`0.7.0`). It stands on its gh-pages release run
-- (`<sha>-v0.7.0`) and every other run of the same commit; a series with no result in those
-- runs stands on the main-branch rows of that version. A gh-pages run of another commit is a
-- *nightly*: a development build of whatever version it had installed, labelled
-- `<version>+<yyyymmdd>.<sha>` (its first observation day and commit). That label sorts after
-- the release and before the next one, as PEP 440 orders local versions, so
-- `compare_versions('0.7.0', 'latest')` compares a release with the newest nightly.
-- `build_rank` orders builds: release order, then each release's nightlies in run order.
-- `runs` are the gh-pages runs that stand for a build and `last_run_seq` the place of the newest
-- in upstream's list: what `build_name` resolves run names, 'latest' and 'previous' with;
-- `last_run` is that newest run, where a comparison of builds finds the code between them.
-- reads: dim_version, fact_build_source
with ranked as (
    select
        build,
        any_value(liger_version) as liger_version,
        any_value(build_kind) as build_kind,
        min(first_run_seq) as run_seq,
        min(first_observed) as first_observed,
        max(last_observed) as last_observed,
        list(distinct source_label order by source_label) as sources,
        sum(results)::bigint as results,
        list(distinct source_label order by source_label) filter (where first_run_seq is not null) as runs,
        max(last_run_seq) as last_run_seq,
        -- runs sharing a place in upstream's list: the last by name, as run order puts them
        max({'seq': last_run_seq, 'run': source_label}) filter (where first_run_seq is not null).run as last_run
    from fact_build_source
    group by build
)
select
    row_number() over (order by v.version_rank, r.build_kind = 'nightly', r.run_seq nulls first, r.build) as build_rank,
    r.build,
    r.liger_version,
    v.version_rank,
    r.build_kind,
    r.first_observed,
    r.last_observed,
    r.sources,
    r.results,
    coalesce(r.runs, []) as runs,
    r.last_run_seq,
    r.last_run
from ranked as r
left join dim_version as v using (liger_version)
order by build_rank;
