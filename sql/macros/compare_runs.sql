-- compare_runs(base, head [, threshold := 0.05]): one row per series in both gh-pages runs,
-- with both p50s, the evidence and the verdict (docs/VERDICTS.md). The question a nightly asks:
-- "did last night's run regress?"
--     select * from compare_runs('previous', 'latest') where verdict = 'regression';
-- Runs are named as upstream names them ('7644a0f', '7644a0f-v0.7.0') or 'latest' / 'previous'.
-- `threshold` is a fraction; without it the session's `regression_threshold()` (5%) applies.
-- reads: comparison, regression_threshold, run_name
create or replace macro compare_runs(base, head, threshold := null) as table
select *
from comparison('run', run_name(base), run_name(head), coalesce(threshold, regression_threshold()));
