-- verdict(...): 'regression', 'improvement', 'unchanged' or 'inconclusive' for one series'
-- change between two sides, from the evidence `judge` gathers (docs/VERDICTS.md).
--
-- A change is a regression or an improvement only when
--   * the raw, the drift-adjusted and the series' own change all exceed `threshold` in the same
--     direction (what the baselines share is not Liger's), and
--   * it stands out from the noise: its sweep shifted by `significance` times the sweep noise,
--     or this workload moved against its sweep by `significance` times its own noise (both
--     scaled for the runs on each side).
-- It is 'unchanged' when a change larger than max(threshold, equivalence) is ruled out at the
-- rule's confidence, and either the change is within the threshold and the noise stands on
-- history (`min_history` run steps of the series, or at least one and the pools of its kind:
-- `pooled`), or the series has `min_history` run steps and the change is within `doubt` noise
-- scales, reading the noise as the series' own (`own_noise`) where that is smaller: a step many
-- times what a quiet series usually moves is never 'unchanged'; else 'inconclusive'.
-- Lower is better for time and memory; a unit of unknown direction gives 'changed'.
-- reads: lower_is_better, verdict_rule
create or replace macro verdict(
    change_log, adjusted_log, own_log, sweep_own_log, residual_log,
    sweep_noise, residual_noise, own_noise, history, pooled, noise_scale, unit, threshold
) as
    case
        when own_log is null then null
        when abs(change_log) > ln(1 + threshold)
            and abs(adjusted_log) > ln(1 + threshold)
            and abs(own_log) > ln(1 + threshold)
            and sign(change_log) = sign(own_log)
            and sign(adjusted_log) = sign(own_log)
            and (
                (abs(sweep_own_log) >= verdict_rule().significance * sweep_noise * noise_scale
                    and sign(sweep_own_log) = sign(own_log))
                or (abs(residual_log) >= verdict_rule().significance * residual_noise * noise_scale
                    and sign(residual_log) = sign(own_log))
            )
            then case
                when lower_is_better(unit) is null then 'changed'
                when (own_log > 0) = lower_is_better(unit) then 'regression'
                else 'improvement'
            end
        when abs(own_log) + verdict_rule().confidence_z * sqrt(sweep_noise ^ 2 + residual_noise ^ 2) * noise_scale
                <= ln(1 + greatest(threshold, verdict_rule().equivalence))
            and (
                (abs(own_log) <= ln(1 + threshold)
                    and (history >= verdict_rule().min_history or (history >= 1 and pooled)))
                or (history >= verdict_rule().min_history
                    and abs(own_log) < verdict_rule().doubt * noise_scale
                        * least(sqrt(sweep_noise ^ 2 + residual_noise ^ 2), coalesce(own_noise, 'inf'::double)))
            )
            then 'unchanged'
        else 'inconclusive'
    end;
