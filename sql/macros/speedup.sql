-- speedup(unit, liger_p50, baseline_p50): how many times better Liger is than the baseline
-- (> 1: Liger is better): baseline / Liger where less is better (ms, MB), Liger / baseline
-- for rates.
-- reads: lower_is_better
create or replace macro speedup(unit, liger_p50, baseline_p50) as
    case
        when lower_is_better(unit) then baseline_p50 / nullif(liger_p50, 0)
        else liger_p50 / nullif(baseline_p50, 0)
    end;
