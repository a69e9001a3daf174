-- build_name(text): the build (see `dim_build`) a user means: a version ('0.7.0', 'v0.7.0'), a
-- release run ('7644a0f-v0.7.0'), any gh-pages run (its build: '7644a0f' is 0.7.0's commit, a
-- nightly run names its nightly build), a build label itself, or 'latest' / 'previous' for
-- the newest build and the one before it.
create or replace macro build_name(text) as
    case lower(trim(text))
        when 'latest' then (select build from dim_build order by build_rank desc limit 1)
        when 'previous' then (select build from dim_build order by build_rank desc limit 1 offset 1)
        else coalesce(
            (select build from dim_build where build = trim(text)),
            (select build from dim_build where build = version_text(text)),
            (select any_value(build) from result_build where source = 'gh-pages' and source_label = trim(text)),
            version_text(text)
        )
    end;
