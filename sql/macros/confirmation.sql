-- confirmation(later, agreeing [, change_point := false]): what the points after a flag say of
-- it, given how many there are (`later`, at most `verdict_rule().confirm_runs`), how many of them
-- agree (lie beyond the threshold from the base side, the flag's way) and whether a change point
-- at the flag's head goes its way: 'confirmed' when most later points agree or the change point
-- does, 'suspected' while there are no later points, else 'retracted'; NULL for a row that is no
-- flag (`later` NULL).
--     select confirmation(3, 2);   -- confirmed
-- reads: nothing
create or replace macro confirmation(later, agreeing, change_point := false) as
    case
        when later is null then null
        when later > 0 and agreeing * 2 > later then 'confirmed'
        when change_point then 'confirmed'
        when later = 0 then 'suspected'
        else 'retracted'
    end;
