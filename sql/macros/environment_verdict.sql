-- environment_verdict(verdict, own_log, environment_log, noise, threshold): 'environment' for a
-- `regression` or `improvement` that environment shifts explain: `environment_log`, what the
-- series moved in the shifts between the two sides (`fact_environment_step`), goes the change's way,
-- and what is left of the change without it would be no flag: within the threshold, or short of
-- `significance` times the noise (`noise`, scaled for the runs on each side). Else `verdict`.
--     select environment_verdict('regression', ln(1.8), ln(1.75), 0.02, 0.05);   -- environment
-- reads: verdict_rule
create or replace macro environment_verdict(verdict, own_log, environment_log, noise, threshold) as
    case
        when verdict in ('regression', 'improvement')
            and sign(environment_log) = sign(own_log)
            and abs(own_log - environment_log) <= greatest(ln(1 + threshold), verdict_rule().significance * noise)
            then 'environment'
        else verdict
    end;
