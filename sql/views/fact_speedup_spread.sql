-- fact_speedup_spread: one row per pairing of a Liger series with a baseline series (same
-- kernel, pass, metric, GPU and workload): how much the speedup of one over the other moved from
-- one gh-pages run to the next, before `fact_speedup_noise` pulls it toward similar pairings.
--
-- `spread` is the robust scale of one run's log speedup: median |step| / 0.6745 / sqrt(2) over
-- the steps between consecutive runs that hold both (`fact_speedup_step`, `history` of them).
-- `last_run` is the pairing's newest run (in upstream's commits.txt order; runs sharing a place
-- in name order, as fact_speedup_step): the run a step into a run appended after it starts from.
--
-- A view: only `fact_speedup_noise` reads it.
-- reads: fact_speedup_step, gh_pages_runs
create or replace view fact_speedup_spread as
select
    liger_series_digest,
    baseline_series_digest,
    any_value(metric) as metric,
    count(step) as history,
    median(abs(step)) / 0.6744897501960817 / sqrt(2) as spread,
    max_by(head_run, (r.seq, head_run)) as last_run
from fact_speedup_step
join gh_pages_runs() as r on r.run = head_run
group by liger_series_digest, baseline_series_digest;
