-- fact_series_noise: one row per series: how much it moves from one gh-pages run to the next when
-- nothing is known to have changed, and so the smallest change a verdict can see in it.
--
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
-- reads: fact_series_spread, verdict_rule
-- What similar series show: the median over series with a history worth the name, of their
-- own spread and of their sweep's (a prior for a series, so a sweep weighs as many times as it
-- has workloads).
with residual_pool as (
    select metric, is_liger, median(residual_spread) as residual_pool
    from fact_series_spread
    where history >= verdict_rule().min_history and not alone
    group by metric, is_liger
),
sweep_pool as (
    select metric, is_liger, median(sweep_spread) as sweep_pool
    from fact_series_spread
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
        m.own_spread,
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
    from fact_series_spread as m
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
    -- a quiet series' own noise, once its history says enough: a step of many times it is
    -- never `unchanged`, however noisy its sweep's bursts are
    case when history >= verdict_rule().min_history then own_spread end as own_noise,
    exp(verdict_rule().significance * greatest(residual_noise, sweep_noise)) - 1 as detectable_change
from shrunk
order by series_digest;
