-- triage_reach: one row per triage target (a series, a sweep, a kernel, or runs alone) and series
-- it reaches, with what people said of it (`triage_event`, written by `liger-warehouse ack`,
-- `annotate`, `mute`, `unmute`, `threshold`; docs/TRIAGE.md). `series_digest` is NULL for notes on
-- runs alone: they reach every series.
--
-- `muted` and `threshold` are the target's state now: its newest `mute` or `unmute`, its newest
-- `threshold` (NULL once reset to the default), with who wrote each and why. `acks` are its
-- acknowledgements, each of one run's flags (`upload_rank` of that run); `notes` its annotations,
-- each of the runs from `first_rank` to `last_rank` (NULL: of the whole history). `series_triage`
-- gathers them per series, for every comparison to attach where its sides span those runs.
--     select scope, target, muted, threshold, len(acks), len(notes) from triage_reach;
-- reads: dim_series, run_code_order, triage_event
create or replace view triage_reach as
with events as (
    select e.*, f.upload_rank as first_rank, l.upload_rank as last_rank
    from triage_event as e
    left join run_code_order as f on f.run = e.first_run
    left join run_code_order as l on l.run = e.last_run
),
targets as (
    select
        scope,
        target,
        arg_max(action, (recorded_at, event_id)) filter (where action in ('mute', 'unmute')) = 'mute' as muted,
        arg_max(author, (recorded_at, event_id)) filter (where action in ('mute', 'unmute')) as muted_by,
        arg_max_null(note, (recorded_at, event_id)) filter (where action in ('mute', 'unmute')) as mute_note,
        -- NULL once reset to the default (`arg_max_null`: the newest event even when NULL);
        -- qualified: a bare `threshold` clashes with the macro parameters named so (`judge`)
        arg_max_null(ev.threshold, (recorded_at, event_id)) filter (where action = 'threshold') as threshold,
        arg_max(author, (recorded_at, event_id)) filter (where action = 'threshold') as threshold_by,
        arg_max_null(note, (recorded_at, event_id)) filter (where action = 'threshold') as threshold_note,
        list({'recorded_at': recorded_at, 'upload_rank': first_rank, 'run': first_run, 'kind': kind, 'note': concat(note, ' (', author, ', run ', first_run, ')')}
            order by recorded_at, event_id) filter (where action = 'ack' and first_rank is not null) as acks,
        list({
            'recorded_at': recorded_at,
            'first_rank': first_rank,
            'last_rank': last_rank,
            'whole': first_run is null,
            'note': concat(
                note, ' (', author,
                coalesce(', commits ' || commits, ', runs ' || nullif(first_run, last_run) || '..' || last_run, ', run ' || first_run, ''),
                ')'
            )
        } order by recorded_at, event_id) filter (where action = 'annotate' and (first_run is null or first_rank is not null)) as notes
    from events as ev
    group by scope, target
)
select
    s.series_digest,
    t.scope,
    t.target,
    coalesce(t.muted, false) as muted,
    if(t.muted, t.muted_by, null) as muted_by,
    if(t.muted, t.mute_note, null) as mute_note,
    t.threshold,
    if(t.threshold is not null, t.threshold_by, null) as threshold_by,
    if(t.threshold is not null, t.threshold_note, null) as threshold_note,
    coalesce(t.acks, []) as acks,
    coalesce(t.notes, []) as notes
from targets as t
left join dim_series as s
    on (t.scope = 'series' and s.series_digest = t.target)
    or (t.scope = 'sweep' and s.sweep_key = t.target)
    or (t.scope = 'kernel' and s.kernel = t.target)
where t.scope = 'run' or s.series_digest is not null;
