-- speedup_winner(speedup, noise, runs, threshold): 'liger', 'baseline' or 'tie' for a speedup
-- (> 1: Liger is better) that stands on `runs` runs, given the pairing's run-to-run noise of the
-- log speedup (`fact_speedup_noise`). A side wins only when the speedup is beyond `threshold`
-- and beyond `verdict_rule().speedup_z` times the noise (scaled for the runs): a 1% difference
-- of two deterministic memory figures is a tie, and so is a 10% one in a pairing whose speedup
-- swings 10% from run to run (docs/VERDICTS.md).
-- reads: verdict_rule
create or replace macro speedup_winner(speedup, noise, runs, threshold) as
    case
        when speedup is null or speedup <= 0 then null
        when abs(ln(speedup)) <= ln(1 + threshold) then 'tie'
        when abs(ln(speedup)) < verdict_rule().speedup_z * coalesce(noise, 0) / sqrt(runs) then 'tie'
        when speedup > 1 then 'liger'
        else 'baseline'
    end;
