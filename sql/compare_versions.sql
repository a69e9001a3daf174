-- compare_versions(base, head [, threshold := 0.05]): one row per series that has a result in
-- both versions, with the verdict of `regressions`.
--
-- Versions may be written '0.7.0', 'v0.7.0' or as a gh-pages release run '7644a0f-v0.7.0'.
-- Each side is the version point of `version_points`: when a version has several results in
-- a series, the most recently observed one stands for it. `threshold` is a fraction; without
-- it the session's `regression_threshold()` (5% by default) applies.
--     select * from compare_versions('0.6.3', '0.7.0') where verdict = 'regression';
create or replace macro compare_versions(base, head, threshold := null) as table
with wanted as (
    select coalesce(threshold, regression_threshold()) as min_change
),
-- The version points of `version_points`, picked the same way among the two versions'
-- results only: the filter reaches the scan of fact_result, which is read once for both sides.
points as (
    select
        *,
        count(*) over (partition by series_digest, liger_version) as version_results
    from results
    where liger_version in (version_text(base), version_text(head))
    qualify row_number() over (
        partition by series_digest, liger_version
        order by observed_at desc, is_current desc, result_digest
    ) = 1
),
base_side as (
    select *
    from points
    where liger_version = version_text(base)
),
head_side as (
    select *
    from points
    where liger_version = version_text(head)
)
select
    h.series_digest,
    h.kernel,
    h.mode,
    h.provider,
    h.backend,
    h.metric,
    h.unit,
    h.gpu,
    h.architecture,
    h.workload,
    h.x_name,
    h.x_value,
    b.liger_version as base_version,
    h.liger_version as head_version,
    b.p50 as base_p50,
    h.p50 as head_p50,
    h.p50 / nullif(b.p50, 0) as ratio,
    h.p50 / nullif(b.p50, 0) - 1 as change,
    verdict(b.p20, b.p50, b.p80, h.p20, h.p50, h.p80, h.unit, w.min_change) as verdict,
    w.min_change as threshold,
    b.p20 as base_p20,
    b.p80 as base_p80,
    h.p20 as head_p20,
    h.p80 as head_p80,
    b.revision as base_revision,
    h.revision as head_revision,
    b.observed_at as base_observed_at,
    h.observed_at as head_observed_at,
    b.version_results as base_results,
    h.version_results as head_results
from base_side as b
join head_side as h using (series_digest)
cross join wanted as w
order by h.kernel, h.mode, h.provider, h.metric, h.gpu, h.workload;
