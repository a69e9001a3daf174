-- fact_speedup_step: one row per pairing of a Liger series with a baseline series (same kernel,
-- pass, metric, GPU and workload) and gh-pages run that holds both: the log speedup of one over
-- the other there (ln of baseline p50 / Liger p50), and its step from the run before that holds
-- both (`base_run`, in upstream's commits.txt order; none at the pairing's first run). Its steps
-- are the history a pairing's spread is read from (`fact_speedup_spread`).
--
-- A view: only `fact_speedup_spread` reads it.
-- reads: dim_series, fact_run_point
create or replace view fact_speedup_step as
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
)
select
    run as head_run,
    liger_series_digest,
    baseline_series_digest,
    metric,
    lag(run) over history as base_run,
    log_speedup,
    log_speedup - lag(log_speedup) over history as step
from pairing
window history as (
    -- runs sharing a place in upstream's list (one inserted later) in name order, as fact_run_step
    partition by liger_series_digest, baseline_series_digest order by run_seq, run
);
