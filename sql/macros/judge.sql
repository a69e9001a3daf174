-- judge(pairs, threshold [, steps := false]): `decompose(pairs, steps)` with each series' noise,
-- its labels (`dim_series`: kernel, mode, provider, backend, metric, unit, GPU, architecture,
-- workload, x) and the verdict: one row per pair and series on both sides, carrying the evidence
-- the verdict was reached on. Kernel and GPU come with the steps (`decompose_points`), so that a
-- filter on them reaches the scan of the stored steps; the other labels are joined here, on the
-- steps as they are read, so that a filter on them drops the other series' steps at that join,
-- before their noise and verdict are computed. `head_point` (from the stored steps) numbers the
-- head among the series' builds on a series' own step, null on other rows.
--
-- Changes are fractions (0.10 = 10% higher): `change` is the raw change of p50, `drift` what the
-- baselines explain of it (host drift, plus the kernel's own baselines for a Liger series),
-- `adjusted_change` the rest, `sweep_change` how the whole sweep moved (less drift). `noise` is
-- the series' run-to-run noise scaled for the runs on each side (`base_runs`, `head_runs`): a
-- median of n runs is steadier than one run. `z` is the adjusted change in units of that noise.
-- reads: decompose, dim_series, fact_series_noise, verdict
create or replace macro judge(pairs, threshold, steps := false) as table
with judged as (
    select
        d.*,
        n.history,
        n.pooled,
        n.residual_noise,
        n.sweep_noise,
        n.detectable_change,
        sqrt((1.0 / d.base_runs + 1.0 / d.head_runs) / 2) as noise_scale,
        s.mode,
        s.provider,
        s.backend,
        s.metric,
        s.unit,
        s.architecture,
        s.workload,
        s.x_name,
        s.x_value
    from decompose(pairs, steps := steps) as d
    join fact_series_noise as n using (series_digest)
    join dim_series as s using (series_digest)
)
select
    * exclude (pooled),
    exp(change_log) - 1 as change,
    exp(change_log - own_log) - 1 as drift,
    exp(own_log) - 1 as adjusted_change,
    exp(sweep_own_log) - 1 as sweep_change,
    sqrt(sweep_noise ^ 2 + residual_noise ^ 2) * noise_scale as noise,
    own_log / nullif(sqrt(sweep_noise ^ 2 + residual_noise ^ 2) * noise_scale, 0) as z,
    threshold as threshold,
    verdict(
        change_log, adjusted_log, own_log, sweep_own_log, residual_log,
        sweep_noise, residual_noise, history, pooled, noise_scale, unit, threshold
    ) as verdict
from judged;
