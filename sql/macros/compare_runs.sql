-- compare_runs(base, head [, threshold := 0.05] [, recent := true]): one row per series in both
-- gh-pages runs, with both p50s, the evidence and the verdict (docs/VERDICTS.md). The question a
-- nightly asks: "did last night's run regress?"
--     select * from compare_runs('previous', 'latest') where verdict = 'regression';
-- Runs are named as upstream names them ('7644a0f', '7644a0f-v0.7.0') or 'latest' / 'previous';
-- a run the warehouse does not hold is an error listing the newest it does (`known_run`).
-- `threshold` is a fraction; without it ('session') the session's `regression_threshold()` (5%) applies.
-- The head is also judged against the base's recent level (`fact_recent_point`): a change the
-- base run shows is no `regression` or `improvement` when the head is `unchanged` against the
-- median of the base run and the runs before it (one unlucky base run). `recent_p50`,
-- `recent_change`, `recent_verdict`, `recent_runs` and `recent_sources` are that evidence.
-- With `recent := false` the verdict stands on the base run alone (the evidence is still shown):
-- more changes found, more false alarms (docs/VERDICTS.md, "At equal recall").
-- reads: comparison, known_run, regression_threshold
create or replace macro compare_runs(base, head, threshold := 'session', recent := true) as table
with judged as (
    select *
    from comparison(
        [
            {'base_kind': 'run', 'base_key': known_run(base), 'head_kind': 'run', 'head_key': known_run(head)},
            {'base_kind': 'recent', 'base_key': known_run(base), 'head_kind': 'run', 'head_key': known_run(head)}
        ],
        coalesce(try_cast(threshold as double), regression_threshold())
    )
),
against_base as (
    select * exclude (base_kind)
    from judged
    where base_kind = 'run'
),
against_recent as (
    select
        series_digest,
        base_p50 as recent_p50,
        adjusted_change as recent_change,
        verdict as recent_verdict,
        base_runs as recent_runs,
        base_sources as recent_sources
    from judged
    where base_kind = 'recent'
)
select
    b.* replace (
        case
            when recent and b.verdict not in ('unchanged', 'inconclusive') and r.recent_verdict = 'unchanged' then 'unchanged'
            else b.verdict
        end as verdict
    ),
    r.recent_p50,
    r.recent_change,
    r.recent_verdict,
    r.recent_runs,
    r.recent_sources
from against_base as b
left join against_recent as r using (series_digest);
