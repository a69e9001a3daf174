-- verdict(...): 'regression', 'improvement' or 'unchanged' for a base and a head measurement.
--
-- A change counts only if the p50 moved by more than `threshold` (a fraction) relative to the
-- base AND the two p20-p80 bands do not overlap; its direction then follows the unit
-- (lower is better for ms and MB). A unit of unknown direction gives 'changed'.
create or replace macro verdict(base_p20, base_p50, base_p80, head_p20, head_p50, head_p80, unit, threshold) as
    case
        when base_p50 is null or head_p50 is null then null
        when head_p20 <= base_p80 and base_p20 <= head_p80 then 'unchanged'
        when base_p50 > 0 and abs(head_p50 / base_p50 - 1) <= threshold then 'unchanged'
        when lower_is_better(unit) is null then 'changed'
        when (head_p50 > base_p50) = lower_is_better(unit) then 'regression'
        else 'improvement'
    end;
