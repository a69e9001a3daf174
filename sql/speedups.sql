-- speedups: one row per Liger result and baseline result of the same run, as a ratio.
--
-- "The same run" means both rows were in one upstream revision (a gh-pages run, or one
-- snapshot of a main-branch CSV) with the same GPU, workload, mode, metric and Liger version,
-- so host drift cancels out. Liger is every provider named liger*; every other provider
-- (torch, huggingface, torch_compile, ...) is a baseline. `speedup` > 1 means Liger is better:
-- baseline p50 / Liger p50 for ms and MB. `winner` is 'tie' while the p20-p80 bands overlap.
create or replace view speedups as
with shown as (
    select
        m.revision_digest,
        f.result_digest,
        f.protocol_digest,
        f.workload_digest,
        f.environment_digest,
        f.liger_version,
        starts_with(i.provider, 'liger') as is_liger
    from fact_revision_member as m
    join fact_result as f using (result_digest)
    join dim_implementation as i using (implementation_digest)
),
pairs as (
    select distinct
        l.result_digest as liger_digest,
        b.result_digest as baseline_digest
    from shown as l
    join shown as b
        on l.revision_digest = b.revision_digest
        and l.protocol_digest = b.protocol_digest
        and l.workload_digest = b.workload_digest
        and l.environment_digest = b.environment_digest
        and l.liger_version = b.liger_version
    where l.is_liger and not b.is_liger
)
select
    l.kernel,
    l.mode,
    l.metric,
    l.unit,
    l.gpu,
    l.architecture,
    l.workload,
    l.x_name,
    l.x_value,
    l.liger_version,
    l.version_rank,
    l.provider as liger_provider,
    b.provider as baseline_provider,
    l.backend,
    l.p50 as liger_p50,
    b.p50 as baseline_p50,
    case when lower_is_better(l.unit) then b.p50 / nullif(l.p50, 0) else l.p50 / nullif(b.p50, 0) end as speedup,
    case
        when l.p20 <= b.p80 and b.p20 <= l.p80 then 'tie'
        when (l.p50 < b.p50) = coalesce(lower_is_better(l.unit), true) then 'liger'
        else 'baseline'
    end as winner,
    l.p20 as liger_p20,
    l.p80 as liger_p80,
    b.p20 as baseline_p20,
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
from pairs
join results as l on l.result_digest = pairs.liger_digest
join results as b on b.result_digest = pairs.baseline_digest;
