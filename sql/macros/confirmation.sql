-- confirmation(later, agreeing): what the points after a flag say of it, given how many there are
-- (`later`, at most `verdict_rule().confirm_runs`) and how many of them agree (lie beyond the
-- threshold from the base side, the flag's way): 'suspected' while there are none, 'confirmed'
-- when most agree, else 'retracted'; NULL for a row that is no flag (`later` NULL).
--     select confirmation(3, 2);   -- confirmed
-- reads: nothing
create or replace macro confirmation(later, agreeing) as
    case
        when later is null then null
        when later = 0 then 'suspected'
        when agreeing * 2 > later then 'confirmed'
        else 'retracted'
    end;
