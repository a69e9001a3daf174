-- version_points: one row per series and Liger version that has a result in it.
--
-- When a version has several results in a series (several gh-pages runs of one release, or a
-- main-branch row re-measured), the most recently observed one (`observed_at`, the CSV
-- timestamp) stands for the version; ties go to the current result, then the digest.
-- `version_results` counts all of them.
create or replace view version_points as
with counted as (
    select
        *,
        count(*) over (partition by series_digest, liger_version) as version_results
    from results
)
select *
from counted
qualify row_number() over (
    partition by series_digest, liger_version
    order by observed_at desc, is_current desc, result_digest
) = 1;
