-- lower_is_better(unit): true for units where less is better (time and memory), false for
-- rates, null for a unit whose direction is unknown.
-- reads: nothing
create or replace macro lower_is_better(unit) as
    case
        when lower(unit) in ('ms', 's', 'us', 'ns', 'mb', 'gb', 'kb', 'mib', 'gib', 'kib', 'bytes') then true
        when lower(unit) like '%/s' or lower(unit) like '%flops%' then false
    end;
