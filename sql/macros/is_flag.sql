-- is_flag(verdict): whether a verdict is a flag, one a later run or build can confirm or take back
-- (`confirmation`): 'regression', 'improvement', 'changed' (no better direction known) and
-- 'environment' (the machine's change, not the code's).
--     select is_flag('inconclusive');   -- false
-- reads: nothing
create or replace macro is_flag(verdict) as
    verdict in ('regression', 'improvement', 'changed', 'environment');
