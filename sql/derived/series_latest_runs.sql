-- series_latest_runs: one row per series with gh-pages points: its `verdict_rule().recent_runs`
-- newest gh-pages runs, newest first (in upstream's commits.txt order; runs sharing a place in
-- name order, as fact_run_step).
--
-- Materialized at publish (a derived table), for the refresh after it: the rows that a run it
-- appends derives in `fact_recent_point` and `fact_run_step` reach back to these runs, so they
-- are read from this table, one row per series, instead of from every run point. A refresh that
-- appends runs re-derives the rows of the appended runs' series from the run points of those runs
-- and of the runs listed here, and carries the others.
-- reads: fact_run_point, gh_pages_runs, verdict_rule
select
    series_digest,
    max_by(run, (seq, run), verdict_rule().recent_runs) as runs
from fact_run_point
join gh_pages_runs() using (run)
group by series_digest
order by series_digest;
