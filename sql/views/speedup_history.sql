-- speedup_history: one row per Liger/baseline pairing and build (see `dim_build`), in release
-- order, with the previous build's speedup and the change.
--
-- A pairing is one Liger series against one baseline series (same kernel, mode, metric, GPU
-- and workload); every speedup compares two results of one run, so host drift between builds
-- cancels out. A build's speedup is the median over its runs (a release: its release run and
-- the other runs of its commit, else its main-branch snapshots; a nightly: its run), stored at
-- publish in `fact_speedup_point`; `runs` counts them, and `winner` reads it as `speedups` does
-- with the noise scaled for the runs.
-- `change` is speedup / previous speedup - 1.
-- reads: dim_build, dim_series, fact_speedup_noise, fact_speedup_point, regression_threshold, speedup_pool, speedup_winner
create or replace view speedup_history as
with judged as (
    select
        p.*,
        b.build_rank,
        b.liger_version,
        coalesce(n.noise, pool.noise) as speedup_noise,
        speedup_winner(p.speedup, coalesce(n.noise, pool.noise), p.runs, regression_threshold()) as winner
    from fact_speedup_point as p
    join dim_build as b using (build)
    left join fact_speedup_noise as n using (liger_series_digest, baseline_series_digest)
    left join speedup_pool as pool on pool.metric = p.metric
),
stepped as (
    select
        *,
        row_number() over pairing_order as point,
        lag(build) over pairing_order as prev_build,
        lag(speedup) over pairing_order as prev_speedup,
        lag(winner) over pairing_order as prev_winner
    from judged
    window pairing_order as (
        partition by liger_series_digest, baseline_series_digest, metric, baseline_provider order by build_rank
    )
)
select
    ls.kernel,
    ls.mode,
    s.metric,
    ls.unit,
    ls.gpu,
    ls.architecture,
    ls.workload,
    ls.x_name,
    ls.x_value,
    ls.provider as liger_provider,
    s.baseline_provider,
    ls.backend,
    s.point,
    s.build,
    s.liger_version,
    s.build_rank,
    s.speedup,
    s.winner,
    s.speedup_noise,
    s.liger_p50,
    s.baseline_p50,
    s.runs,
    s.sources,
    s.prev_build,
    s.prev_speedup,
    s.prev_winner,
    s.speedup / nullif(s.prev_speedup, 0) - 1 as change,
    s.liger_series_digest,
    s.baseline_series_digest
from stepped as s
-- the Liger series names the kernel, pass, GPU and workload both sides share
join dim_series as ls on ls.series_digest = s.liger_series_digest;
