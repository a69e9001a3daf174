-- judgeable(p50): whether a change can be measured from or to a point with this p50 (its log
-- ratio exists): a positive p50. `decompose_points` judges a step only between two such points;
-- `series_history` and a refresh's comparison of stored steps (analysis/build_order.py) find the
-- steps it left out by the same rule.
-- reads: nothing
create or replace macro judgeable(p50) as
    coalesce(p50 > 0, false);
