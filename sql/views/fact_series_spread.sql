-- fact_series_spread: one row per series: how much it moved from one gh-pages run to the next,
-- read from its run steps (`fact_run_step`), before `fact_series_noise` pulls it toward similar
-- series (docs/VERDICTS.md):
--   residual_spread  median |residual| / 0.6745 over the series' steps (`history` of them);
--                    `alone` when it is alone in its sweep (its residual is zero by construction);
--   own_spread       median |own change| / 0.6745 over the same steps: how much the series itself
--                    moves, sweep shifts included, in its usual (median) step;
--   sweep_spread     its sweep's own shifts at their 75th percentile (`verdict_rule().sweep_quantile`),
--                    over the sweep's `sweep_history` steps, because whole sweeps shift in bursts.
-- A series without gh-pages history has a history of 0 and no spread.
--
-- A view: only `fact_series_noise` reads it.
-- reads: dim_series, fact_run_step, verdict_rule
create or replace view fact_series_spread as
with step as (
    select series_digest, sweep_key, base_run, head_run, own_log, residual_log, sweep_own_log, sweep_series
    from fact_run_step
),
own as (
    select
        series_digest,
        count(*) as history,
        median(abs(residual_log)) / 0.6744897501960817 as residual_spread,
        median(abs(own_log)) / 0.6744897501960817 as own_spread,
        -- alone in its sweep: its residual is zero by construction and carries no noise
        max(sweep_series) = 1 as alone
    from step
    group by series_digest
),
sweep_shift as (
    select distinct sweep_key, base_run, head_run, sweep_own_log
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
)
select
    s.series_digest,
    s.metric,
    s.is_liger,
    s.sweep_key,
    coalesce(o.history, 0) as history,
    coalesce(o.alone, false) as alone,
    o.residual_spread,
    o.own_spread,
    w.sweep_history,
    w.sweep_spread
from dim_series as s
left join own as o using (series_digest)
left join sweep as w using (sweep_key);
