-- speedup_history: one row per Liger/baseline pairing and build (see `dim_build`), in release
-- order, with the previous build's speedup and the change.
--
-- A pairing is one Liger series against one baseline series (same kernel, mode, metric, GPU
-- and workload); every speedup compares two results of one run, so host drift between builds
-- cancels out. A build's speedup is the median over its runs (a release: its release run and
-- the other runs of its commit, else its main-branch snapshots; a nightly: its run), `runs`
-- counts them, and `winner` reads it as `speedups` does with the noise scaled for the runs.
-- `change` is speedup / previous speedup - 1.
-- reads: dim_build, regression_threshold, result_build, speedup_winner, speedups
create or replace view speedup_history as
with placed as (
    select s.*, b.build, s.source = 'gh-pages' as from_run
    from speedups as s
    join result_build as b on b.result_digest = s.liger_result_digest
),
-- A build stands on its runs where the pairing has any there, else on its other snapshots.
basis as (
    select liger_series_digest, baseline_series_digest, build, bool_or(from_run) as from_run
    from placed
    group by all
),
points as (
    select
        p.liger_series_digest,
        p.baseline_series_digest,
        p.build,
        any_value(p.kernel) as kernel,
        any_value(p.mode) as mode,
        any_value(p.metric) as metric,
        any_value(p.unit) as unit,
        any_value(p.gpu) as gpu,
        any_value(p.architecture) as architecture,
        any_value(p.workload) as workload,
        any_value(p.x_name) as x_name,
        any_value(p.x_value) as x_value,
        any_value(p.liger_provider) as liger_provider,
        any_value(p.baseline_provider) as baseline_provider,
        any_value(p.backend) as backend,
        any_value(p.liger_version) as liger_version,
        median(p.speedup) as speedup,
        median(p.liger_p50) as liger_p50,
        median(p.baseline_p50) as baseline_p50,
        any_value(p.speedup_noise) as speedup_noise,
        count(*) as runs,
        list(distinct p.revision order by p.revision) as sources
    from placed as p
    semi join basis as b using (liger_series_digest, baseline_series_digest, build, from_run)
    group by p.liger_series_digest, p.baseline_series_digest, p.build
),
ordered as (
    select
        p.*,
        b.build_rank,
        speedup_winner(p.speedup, p.speedup_noise, p.runs, regression_threshold()) as winner,
        row_number() over pairing_order as point
    from points as p
    join dim_build as b using (build)
    window pairing_order as (partition by p.liger_series_digest, p.baseline_series_digest order by b.build_rank)
),
stepped as (
    select
        *,
        lag(build) over pairing_order as prev_build,
        lag(speedup) over pairing_order as prev_speedup,
        lag(winner) over pairing_order as prev_winner
    from ordered
    window pairing_order as (partition by liger_series_digest, baseline_series_digest order by build_rank)
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
    build,
    liger_version,
    build_rank,
    speedup,
    winner,
    speedup_noise,
    liger_p50,
    baseline_p50,
    runs,
    sources,
    prev_build,
    prev_speedup,
    prev_winner,
    speedup / nullif(prev_speedup, 0) - 1 as change,
    liger_series_digest,
    baseline_series_digest
from stepped;
