-- series_triage: one row per series, with the triage that reaches it (`triage_reach`): `muted`
-- (a mute of the series, its sweep or its kernel stands), `own_threshold` (the series', else its
-- sweep's, else its kernel's threshold; NULL: the query's), `acks` (its acknowledgements, each of
-- one run) and `notes` (its annotations and those of runs alone), oldest first.
-- Materialized by every publish and every triage write (a derived table, recreated whole in that
-- transaction): every comparison reads it (`judge`), and one small table costs a query less than
-- the view over the event log it stands for.
-- reads: dim_series, triage_reach
with reached as (
    select
        r.series_digest,
        bool_or(r.muted) as muted,
        arg_min(r.threshold, case r.scope when 'series' then 1 when 'sweep' then 2 else 3 end)
            filter (where r.threshold is not null) as own_threshold,
        flatten(list(r.acks)) as acks,
        flatten(list(r.notes)) as notes
    from triage_reach as r
    group by r.series_digest
)
select
    s.series_digest,
    coalesce(t.muted, false) as muted,
    t.own_threshold,
    -- `recorded_at` leads each struct: sorted, the newest is last
    list_sort(coalesce(t.acks, [])) as acks,
    list_sort(list_concat(coalesce(t.notes, []), coalesce((select notes from reached where series_digest is null), []))) as notes
from dim_series as s
left join reached as t using (series_digest)
order by s.series_digest;
