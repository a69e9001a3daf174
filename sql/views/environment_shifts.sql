-- environment_shifts: one row per gh-pages run at which the machine, not the code, moved Liger's
-- timings: many Liger timing series of kernels whose files did not change since the run uploaded
-- before it (`previous_run`) moved together, one way (`environment_evidence`).
--
-- `series` are the series judged at the run (held by both runs, their kernel's code unchanged),
-- `moved` those that moved the run's `direction` ('slower' or 'faster', the way more moved). The
-- run is a shift when `moved` is at least `environment_share` of `series` and the moves come from
-- at least `environment_kernels` kernels (`verdict_rule()`): one kernel's sweep moving is one
-- event, not an environment. Drift removal already takes out what the baselines (torch, the other
-- providers) share; this is what it cannot see: a floor under Liger's own small workloads, or its
-- removal (docs/VERDICTS.md, "Environment shifts"). `moved_kernels` names the kernels that moved,
-- most moved first. A run without a compare of its step is never judged.
--     select run, direction, moved, series, moved_share from environment_shifts;
-- reads: environment_evidence, verdict_rule
create or replace view environment_shifts as
with counted as (
    select
        previous_run,
        run,
        upload_rank,
        count(*) as series,
        count(distinct kernel) as kernels,
        count(*) filter (where moved = 'slower') as slower,
        count(*) filter (where moved = 'faster') as faster
    from environment_evidence
    group by previous_run, run, upload_rank
),
oriented as (
    select *, if(slower >= faster, 'slower', 'faster') as direction
    from counted
),
moves as (
    select o.run, e.kernel, count(*) as moved
    from oriented as o
    join environment_evidence as e on e.run = o.run and e.moved = o.direction
    group by o.run, e.kernel
)
select
    o.run,
    o.previous_run,
    o.upload_rank,
    o.direction,
    greatest(o.slower, o.faster) as moved,
    o.series,
    greatest(o.slower, o.faster) / o.series as moved_share,
    count(m.kernel) as kernels_moved,
    o.kernels,
    list(m.kernel order by m.moved desc, m.kernel) as moved_kernels
from oriented as o
join moves as m using (run)
group by all
having greatest(o.slower, o.faster) >= verdict_rule().environment_share * o.series
    and count(m.kernel) >= verdict_rule().environment_kernels;
