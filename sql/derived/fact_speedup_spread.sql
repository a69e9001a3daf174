-- fact_speedup_spread: one row per pairing of a Liger series with a baseline series (same
-- kernel, pass, metric, GPU and workload): how much the speedup of one over the other moved from
-- one gh-pages run to the next, before `fact_speedup_noise` pulls it toward similar pairings.
--
-- `spread` is the robust scale of one run's log speedup: median |step| / 0.6745 / sqrt(2) over
-- the steps between consecutive runs that hold both (`history`).
-- Materialized at publish (a derived table). A pairing's spread reads only its two series' run
-- points, so a refresh re-derives the pairings of the series in the run points that came or went
-- and carries the others.
-- reads: dim_series, fact_run_point
with point as (
    select p.run, p.run_seq, p.series_digest, p.p50, s.point_key, s.metric, s.is_liger
    from fact_run_point as p
    join dim_series as s using (series_digest)
    where p.p50 > 0
),
pairing as (
    select
        l.series_digest as liger_series_digest,
        b.series_digest as baseline_series_digest,
        l.metric,
        run,
        l.run_seq,
        ln(b.p50 / l.p50) as log_speedup
    from point as l
    join point as b using (run, point_key)
    where l.is_liger and not b.is_liger
),
step as (
    select
        *,
        log_speedup - lag(log_speedup) over (
            partition by liger_series_digest, baseline_series_digest order by run_seq, run
        ) as step
    from pairing
)
select
    liger_series_digest,
    baseline_series_digest,
    any_value(metric) as metric,
    count(step) as history,
    median(abs(step)) / 0.6744897501960817 / sqrt(2) as spread
from step
group by liger_series_digest, baseline_series_digest;
