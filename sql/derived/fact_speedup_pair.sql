-- fact_speedup_pair: one row per Liger result and baseline result that one upstream revision
-- showed together (a gh-pages run, or one snapshot of a main-branch CSV) with the same GPU,
-- workload, mode, metric and Liger version: the pairs `speedups` reads as ratios and
-- `speedup_history` groups by build. Liger is every provider named liger*; every other
-- provider (torch, huggingface, torch_compile, ...) is a baseline.
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: dim_series, fact_result, fact_revision_member, result_build, revision_labels
with result as (
    select
        f.result_digest,
        f.series_digest,
        f.protocol_digest,
        f.workload_digest,
        f.environment_digest,
        f.metric,
        f.unit,
        f.liger_version,
        b.build,
        f.p20,
        f.p50,
        f.p80,
        f.observed_at,
        f.source,
        f.source_key,
        f.first_revision_digest,
        f.is_current,
        -- Only one revision showed it (every gh-pages result): that revision is its first.
        coalesce(f.first_revision_digest = f.last_revision_digest, false) as shown_once,
        s.provider,
        s.backend,
        s.is_liger,
        r.label as revision
    from fact_result as f
    join dim_series as s using (series_digest)
    join result_build as b using (result_digest)
    left join revision_labels as r on r.revision_digest = f.first_revision_digest
),
-- Each revision that showed a result several revisions showed (a main-branch row across
-- commits), once.
shown_again as (
    select distinct m.revision_digest, r.*
    from fact_revision_member as m
    join result as r using (result_digest)
    where not r.shown_once
),
-- Each revision that showed a Liger result, and each that showed a baseline result.
shown_liger as (
    select first_revision_digest as revision_digest, *
    from result
    where shown_once and is_liger
    union all
    select *
    from shown_again
    where is_liger
),
shown_baseline as (
    select first_revision_digest as revision_digest, *
    from result
    where shown_once and not is_liger
    union all
    select *
    from shown_again
    where not is_liger
),
-- A pair: both results in one revision, with the same GPU, workload, mode, metric and version.
-- A pair with a result that only one revision showed is shown together once; two results
-- that several revisions showed pair in each of them, and are one pair.
matched as (
    select l.result_digest as liger_result_digest, b.result_digest as baseline_result_digest
    from shown_liger as l
    join shown_baseline as b
        using (revision_digest, protocol_digest, workload_digest, environment_digest, liger_version)
    where l.shown_once or b.shown_once
    union all
    select distinct l.result_digest, b.result_digest
    from shown_again as l
    join shown_again as b
        using (revision_digest, protocol_digest, workload_digest, environment_digest, liger_version)
    where l.is_liger and not b.is_liger
)
select
    l.source_key,
    m.liger_result_digest,
    m.baseline_result_digest,
    l.series_digest as liger_series_digest,
    b.series_digest as baseline_series_digest,
    l.metric,
    l.unit,
    l.liger_version,
    l.build,
    l.provider as liger_provider,
    b.provider as baseline_provider,
    l.backend,
    l.p20 as liger_p20,
    l.p50 as liger_p50,
    l.p80 as liger_p80,
    b.p20 as baseline_p20,
    b.p50 as baseline_p50,
    b.p80 as baseline_p80,
    l.source,
    l.revision,
    l.observed_at as liger_observed_at,
    b.observed_at as baseline_observed_at,
    l.is_current and b.is_current as is_current
from matched as m
join result as l on l.result_digest = m.liger_result_digest
join result as b on b.result_digest = m.baseline_result_digest
order by source_key, liger_result_digest, baseline_result_digest;
