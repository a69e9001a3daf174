-- regression_threshold(): the smallest relative change of p50 that counts as a regression or
-- an improvement, as a fraction. 5% unless the session sets it:
--     set variable regression_threshold = 0.10;
-- `regressions` and `speedup_history` read it; `compare_versions` also takes it as an argument.
-- reads: nothing
create or replace macro regression_threshold() as
    coalesce(try_cast(getvariable('regression_threshold') as double), 0.05);
