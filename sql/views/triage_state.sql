-- triage_state: one row per series, sweep or kernel that is muted or judged at a threshold of its
-- own now (`triage_reach`), with who said so and why, and how many series it reaches. `target` is
-- the series digest, the sweep key (`dim_series.sweep_key`) or the kernel name.
--     select scope, target, muted, muted_by, threshold, series from triage_state;
-- reads: triage_reach
create or replace view triage_state as
select
    scope,
    target,
    muted,
    muted_by,
    mute_note,
    threshold,
    threshold_by,
    threshold_note,
    count(*) as series
from triage_reach
where muted or threshold is not null
group by all;
