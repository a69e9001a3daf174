-- fact_speedup_noise: one row per pairing of a Liger series with a baseline series (same
-- kernel, pass, metric, GPU and workload): how much the speedup of one over the other moves
-- from one gh-pages run to the next. Materialized at publish (a derived table, recreated whole in the publishing transaction).
--
-- Each pairing's `spread` (`fact_speedup_spread`) is pulled toward the median of the pairings of
-- its metric, as a series' noise is, with the weight of `verdict_rule().prior_steps` steps;
-- `noise` is the result. One new run moves the pool, so this is derived whole: one pass over one
-- row per pairing.
-- reads: fact_speedup_spread, verdict_rule
with pooled as (
    select metric, median(spread) filter (where history >= verdict_rule().min_history) as pool
    from fact_speedup_spread
    group by metric
)
select
    o.liger_series_digest,
    o.baseline_series_digest,
    o.metric,
    o.history,
    o.spread,
    p.pool,
    sqrt(
        (o.history * coalesce(o.spread, 0) ^ 2 + verdict_rule().prior_steps * coalesce(p.pool, 0) ^ 2)
        / (o.history + verdict_rule().prior_steps)
    ) as noise
from fact_speedup_spread as o
left join pooled as p using (metric)
order by liger_series_digest, baseline_series_digest;
