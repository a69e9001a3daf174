-- speedup_history: one row per Liger/baseline pairing and Liger version, in release order,
-- with the previous version's speedup and the change.
--
-- A pairing is one Liger series against one baseline series (same kernel, mode, metric, GPU
-- and workload). Each version's speedup comes from its most recently observed run (the
-- newer of the two sides' timestamps), so both sides of every point ran together and host
-- drift between releases cancels out. `change` is speedup / previous speedup - 1.
create or replace view speedup_history as
with points as (
    select
        *,
        count(*) over pairing_version as version_runs
    from speedups
    window pairing_version as (partition by liger_series_digest, baseline_series_digest, liger_version)
    qualify row_number() over (
        partition by liger_series_digest, baseline_series_digest, liger_version
        order by greatest(liger_observed_at, baseline_observed_at) desc, liger_result_digest, baseline_result_digest
    ) = 1
),
ordered as (
    select
        *,
        row_number() over pairing_order as point,
        lag(liger_version) over pairing_order as prev_version,
        lag(speedup) over pairing_order as prev_speedup,
        lag(winner) over pairing_order as prev_winner
    from points
    window pairing_order as (partition by liger_series_digest, baseline_series_digest order by version_rank)
)
select
    kernel,
    mode,
    metric,
    unit,
    gpu,
    architecture,
    workload,
    x_name,
    x_value,
    liger_provider,
    baseline_provider,
    backend,
    point,
    liger_version,
    version_rank,
    speedup,
    winner,
    liger_p50,
    baseline_p50,
    version_runs,
    prev_version,
    prev_speedup,
    prev_winner,
    speedup / nullif(prev_speedup, 0) - 1 as change,
    source,
    revision,
    liger_series_digest,
    baseline_series_digest
from ordered
order by liger_series_digest, baseline_series_digest, version_rank;
