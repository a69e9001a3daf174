-- build_name(text): the build (see `dim_build`) a user means: a version ('0.7.0', 'v0.7.0'), a
-- release run ('7644a0f-v0.7.0'), any gh-pages run (its build: '7644a0f' is 0.7.0's commit, a
-- nightly run names its nightly build), a build label itself, or 'latest' / 'previous': the
-- build of the newest gh-pages run, and the build of the newest run of another build before it.
-- So `compare_versions('0.7.0', 'latest')` compares a release with the newest nightly.
-- Resolved from dim_build alone (a row per build, so 'previous' is the second by its newest
-- run), as every branch is evaluated: reading the run points for them took seconds at 10^7.
-- reads: dim_build, version_text
create or replace macro build_name(text) as
    case lower(trim(text))
        when 'latest' then (
            select build from dim_build
            where last_run_seq is not null
            order by last_run_seq desc, build limit 1
        )
        when 'previous' then (
            select build from dim_build
            where last_run_seq is not null
            order by last_run_seq desc, build limit 1 offset 1
        )
        else coalesce(
            (select build from dim_build where build = trim(text)),
            (select build from dim_build where build = version_text(text)),
            (select any_value(build) from dim_build where list_contains(runs, trim(text))),
            version_text(text)
        )
    end;
