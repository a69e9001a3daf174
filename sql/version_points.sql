-- version_points: one row per series and Liger version that has a result in it.
--
-- When a version has several results in a series (several gh-pages runs of one release, or a
-- main-branch row re-measured), the most recently observed one (`observed_at`, the CSV
-- timestamp) stands for the version; ties go to the current result, then the digest.
-- `version_results` counts all of them.
create or replace view version_points as
-- Picked on fact_result's narrow columns, then joined to `results` for the readable ones.
select
    r.*,
    s.version_results
from results as r
-- Joined on the version too, so that a filter on `liger_version` also reaches the
-- aggregation: only that version's results are read and grouped.
join version_standing as s on s.result_digest = r.result_digest and s.liger_version = r.liger_version;
