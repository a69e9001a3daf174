-- fact_series_noise: one row per series: how much it moves from one gh-pages run to the next when
-- nothing is known to have changed, and so the smallest change a verdict can see in it.
--
-- Materialized at publish (a derived table). Read from `run_steps` (docs/VERDICTS.md):
--   residual_noise  a robust scale of the series' moves against its sweep: median |residual|
--                   / 0.6745 (the standard deviation, for normal noise);
--   sweep_noise     a robust scale of its sweep's own shifts, read from their 75th percentile
--                   (`verdict_rule().sweep_quantile`) because whole sweeps shift in bursts;
-- each pulled toward the median of similar series (same metric, Liger or baseline) with the
-- weight of `verdict_rule().prior_steps` run steps, so a short or lucky history does not make a
-- series look quieter than its kind. `noise` combines them; `detectable_change` is the smallest
-- change that one run against one run calls whether it moves the whole sweep or this workload
-- alone (significance x the larger of the two); `history` counts the run steps; `pooled` says
-- both pools of its kind exist (some series of the kind has `min_history` steps). A series
-- without gh-pages history gets the pooled noise and a history of 0.
-- reads: dim_series, run_steps, verdict_rule
with step as (
    select series_digest, sweep_key, pair, residual_log, sweep_own_log, sweep_series
    from run_steps
),
own as (
    select
        series_digest,
        count(*) as history,
        median(abs(residual_log)) / 0.6744897501960817 as residual_spread,
        -- alone in its sweep: its residual is zero by construction and carries no noise
        max(sweep_series) = 1 as alone
    from step
    group by series_digest
),
sweep_shift as (
    select distinct sweep_key, pair, sweep_own_log
    from step
),
sweep as (
    select
        sweep_key,
        count(*) as sweep_history,
        -- the quantile q of |normal| is the (1+q)/2 quantile of the normal: 1.1503 for q = 0.75
        quantile_cont(abs(sweep_own_log), verdict_rule().sweep_quantile) / verdict_rule().sweep_scale as sweep_spread
    from sweep_shift
    group by sweep_key
),
measured as (
    select
        s.series_digest,
        s.metric,
        s.is_liger,
        s.sweep_key,
        coalesce(o.history, 0) as history,
        coalesce(o.alone, false) as alone,
        o.residual_spread,
        w.sweep_history,
        w.sweep_spread
    from dim_series as s
    left join own as o using (series_digest)
    left join sweep as w using (sweep_key)
),
-- What similar series show: the median over series with a history worth the name, of their
-- own spread and of their sweep's (a prior for a series, so a sweep weighs as many times as it
-- has workloads).
residual_pool as (
    select metric, is_liger, median(residual_spread) as residual_pool
    from measured
    where history >= verdict_rule().min_history and not alone
    group by metric, is_liger
),
sweep_pool as (
    select metric, is_liger, median(sweep_spread) as sweep_pool
    from measured
    where sweep_history >= verdict_rule().min_history
    group by metric, is_liger
),
shrunk as (
    select
        m.series_digest,
        m.history,
        m.residual_spread,
        m.sweep_spread,
        m.sweep_history,
        rp.residual_pool,
        sp.sweep_pool,
        case
            when m.alone then 0.0
            else sqrt(
                (m.history * coalesce(m.residual_spread, 0) ^ 2 + verdict_rule().prior_steps * coalesce(rp.residual_pool, 0) ^ 2)
                / (m.history + verdict_rule().prior_steps)
            )
        end as residual_noise,
        sqrt(
            (coalesce(m.sweep_history, 0) * coalesce(m.sweep_spread, 0) ^ 2 + verdict_rule().prior_steps * coalesce(sp.sweep_pool, 0) ^ 2)
            / (coalesce(m.sweep_history, 0) + verdict_rule().prior_steps)
        ) as sweep_noise
    from measured as m
    left join residual_pool as rp using (metric, is_liger)
    left join sweep_pool as sp using (metric, is_liger)
)
select
    series_digest,
    history,
    residual_noise,
    sweep_noise,
    residual_spread,
    sweep_spread,
    coalesce(sweep_history, 0) as sweep_history,
    residual_pool,
    sweep_pool,
    residual_pool is not null and sweep_pool is not null as pooled,
    sqrt(residual_noise ^ 2 + sweep_noise ^ 2) as noise,
    exp(verdict_rule().significance * greatest(residual_noise, sweep_noise)) - 1 as detectable_change
from shrunk;
