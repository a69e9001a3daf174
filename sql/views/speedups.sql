-- speedups: one row per Liger result and baseline result of the same run, as a ratio.
--
-- "The same run" means both rows were in one upstream revision (a gh-pages run, or one
-- snapshot of a main-branch CSV) with the same GPU, workload, mode, metric and Liger version,
-- so host drift cancels out. Liger is every provider named liger*; every other provider
-- (torch, huggingface, torch_compile, ...) is a baseline. `speedup` > 1 means Liger is better:
-- baseline p50 / Liger p50 for ms and MB. `winner` is 'tie' unless the speedup is beyond the
-- threshold and beyond the pairing's run-to-run noise (`speedup_noise`, see `speedup_winner`).
-- reads: dim_series, dim_version, fact_revision_member, fact_speedup_noise, labelled_results, lower_is_better, regression_threshold, speedup_winner
create or replace view speedups as
-- What a pairing without gh-pages history is judged against: its metric's pooled noise.
with speedup_pool as (
    select metric, any_value(pool) as noise
    from fact_speedup_noise
    group by metric
),
-- Every result with what a pair shows of it; the dimensions are joined to the pairs.
result as (
    select
        f.result_digest,
        f.series_digest,
        f.protocol_digest,
        f.workload_digest,
        f.environment_digest,
        f.metric,
        f.unit,
        f.liger_version,
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
        f.provider,
        f.backend,
        f.is_liger,
        f.revision
    from labelled_results as f
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
-- A pair with a result that only one revision showed is shown together once; two results
-- that several revisions showed pair in each of them, and are one pair.
matched as (
    select l.result_digest as liger_result_digest, b.result_digest as baseline_result_digest
    from shown_liger as l
    join shown_baseline as b
        on l.revision_digest = b.revision_digest
        and l.protocol_digest = b.protocol_digest
        and l.workload_digest = b.workload_digest
        and l.environment_digest = b.environment_digest
        and l.liger_version = b.liger_version
    where l.shown_once or b.shown_once
    union all
    select distinct l.result_digest, b.result_digest
    from shown_again as l
    join shown_again as b
        on l.revision_digest = b.revision_digest
        and l.protocol_digest = b.protocol_digest
        and l.workload_digest = b.workload_digest
        and l.environment_digest = b.environment_digest
        and l.liger_version = b.liger_version
    where l.is_liger and not b.is_liger
),
pairs as (
    select
        l.protocol_digest,
        l.workload_digest,
        l.environment_digest,
        l.metric,
        l.unit,
        l.liger_version,
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
        l.source_key,
        l.revision,
        l.observed_at as liger_observed_at,
        b.observed_at as baseline_observed_at,
        l.is_current and b.is_current as is_current,
        l.series_digest as liger_series_digest,
        b.series_digest as baseline_series_digest,
        l.result_digest as liger_result_digest,
        b.result_digest as baseline_result_digest
    from matched as m
    join result as l on l.result_digest = m.liger_result_digest
    join result as b on b.result_digest = m.baseline_result_digest
)
select
    ls.kernel,
    ls.mode,
    s.metric,
    s.unit,
    ls.gpu,
    ls.architecture,
    ls.workload,
    ls.x_name,
    ls.x_value,
    s.liger_version,
    v.version_rank,
    s.liger_provider,
    s.baseline_provider,
    s.backend,
    s.liger_p50,
    s.baseline_p50,
    case
        when lower_is_better(s.unit) then s.baseline_p50 / nullif(s.liger_p50, 0)
        else s.liger_p50 / nullif(s.baseline_p50, 0)
    end as speedup,
    speedup_winner(
        case
            when lower_is_better(s.unit) then s.baseline_p50 / nullif(s.liger_p50, 0)
            else s.liger_p50 / nullif(s.baseline_p50, 0)
        end,
        coalesce(n.noise, pool.noise),
        1,
        regression_threshold()
    ) as winner,
    coalesce(n.noise, pool.noise) as speedup_noise,
    s.liger_p20,
    s.liger_p80,
    s.baseline_p20,
    s.baseline_p80,
    s.source,
    s.source_key,
    s.revision,
    s.liger_observed_at,
    s.baseline_observed_at,
    s.is_current,
    s.liger_series_digest,
    s.baseline_series_digest,
    s.liger_result_digest,
    s.baseline_result_digest
from pairs as s
-- the Liger series names the kernel, pass, GPU and workload both sides share
join dim_series as ls on ls.series_digest = s.liger_series_digest
left join dim_version as v on v.liger_version = s.liger_version
left join fact_speedup_noise as n using (liger_series_digest, baseline_series_digest)
left join speedup_pool as pool on pool.metric = s.metric;
