-- speedup_history: one row per Liger/baseline pairing and Liger version, in release order,
-- with the previous version's speedup and the change.
--
-- A pairing is one Liger series against one baseline series (same kernel, mode, metric, GPU
-- and workload). Each version's speedup comes from its most recently observed run (the
-- newer of the two sides' timestamps), so both sides of every point ran together and host
-- drift between releases cancels out. `change` is speedup / previous speedup - 1.
create or replace view speedup_history as
-- `speedups` is read once, for the pick and for the points.
with pairings as (
    select *
    from speedups
),
-- The run that stands for each pairing and version, picked by aggregation on the digests and
-- timestamps rather than by ranking whole rows.
standing as (
    select
        liger_series_digest,
        baseline_series_digest,
        liger_version,
        count(*) as version_runs,
        first(
            {'liger': liger_result_digest, 'baseline': baseline_result_digest}
            order by
                greatest(liger_observed_at, baseline_observed_at) desc,
                liger_result_digest,
                baseline_result_digest
        ) as run
    from pairings
    group by liger_series_digest, baseline_series_digest, liger_version
),
points as (
    select
        p.*,
        s.version_runs
    from pairings as p
    join standing as s
        on s.run.liger = p.liger_result_digest and s.run.baseline = p.baseline_result_digest
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
