-- version_standing: the result that stands for each series and Liger version.
--
-- When a version has several results in a series (several gh-pages runs of one release, or a
-- main-branch row re-measured), the most recently observed one (`observed_at`, the CSV
-- timestamp) stands for the version; ties go to the current result, then the digest.
-- `version_results` counts all of them. Kept to fact_result's narrow columns, so the views
-- built on it (version_points, version_history, regressions) pick on narrow rows.
create or replace view version_standing as
select
    series_digest,
    liger_version,
    count(*) as version_results,
    first(result_digest order by observed_at desc, is_current desc, result_digest) as result_digest
from fact_result
group by series_digest, liger_version;
