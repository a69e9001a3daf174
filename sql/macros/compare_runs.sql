-- compare_runs(base, head [, threshold := 0.05] [, recent := true]): one row per series in both
-- gh-pages runs, with both p50s, the evidence and the verdict (docs/VERDICTS.md). The question a
-- nightly asks: "did last night's run regress?"
--     select * from compare_runs('previous', 'latest') where verdict = 'regression';
-- Runs are named as upstream names them ('7644a0f', '7644a0f-v0.7.0') or 'latest' / 'previous';
-- a run the warehouse does not hold is an error listing the newest it does (`known_run`).
-- `threshold` is a fraction; without it ('session') the session's `regression_threshold()` (5%) applies.
--
-- By default the base side is the series' recent level as well as the base run: the head is
-- judged against the base run and against the median of the base run and the runs before it
-- (`fact_recent_point`). A flag against the base run stands unless the recent level says
-- `unchanged` (then so does the verdict) or the head sits at or beyond the recent level the other
-- way, raw or once the drift is taken out (then `inconclusive`): one unusual base run is never the
-- whole baseline. `recent_p50`, `recent_change`, `recent_verdict`, `recent_runs` and
-- `recent_sources` are that evidence.
-- With `recent := false` the verdict stands on the base run alone: more changes found, more
-- false alarms (docs/VERDICTS.md, "At equal recall").
--
-- A flag is confirmed or taken back by the runs after the head (`later_points`): `confirmed_by`
-- of the `later_runs` sit beyond the threshold from the base side (the recent level, or the base
-- run with `recent := false`) in the flag's direction; `change_point_pvalue` is the p-value of
-- a change point at the head the flag's way (`fact_change_point`: Otava's e-divisive over the
-- whole history, stronger evidence than three runs where it exists); `confirmation` is
-- 'confirmed' when most later runs agree or such a change point exists, else 'suspected' while
-- no later run holds the series, else 'retracted' (`confirmation`).
--
-- `commits_between` and `suspect_commits` are the code between the two runs for the series'
-- kernel: the commits GitHub lists and those that may have changed the kernel (`run_range_suspects`).
-- reads: comparison, confirmation, confirms, dim_upstream_revision, fact_change_point, is_flag, known_run, later_points, regression_threshold, run_range_suspects
create or replace macro compare_runs(base, head, threshold := 'session', recent := true) as table
-- the names resolved once: each `known_run` reads the runs several times
with named as (
    select known_run(base) as base_run, known_run(head) as head_run
),
judged as (
    select *
    from comparison(
        [
            {'base_kind': 'run', 'base_key': (select base_run from named), 'head_kind': 'run', 'head_key': (select head_run from named)},
            {'base_kind': 'recent', 'base_key': (select base_run from named), 'head_kind': 'run', 'head_key': (select head_run from named)}
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
),
verdicts as (
    select
        b.* replace (
            case
                when not recent or b.verdict in ('unchanged', 'inconclusive') or r.recent_verdict is null then b.verdict
                when r.recent_verdict = 'unchanged' then 'unchanged'
                -- the head at or beyond the recent level the other way (raw or adjusted): no flag
                when sign(b.head_p50 - r.recent_p50) <> sign(b.change) or sign(r.recent_change) <> sign(b.adjusted_change)
                    then 'inconclusive'
                else b.verdict
            end as verdict
        ),
        r.recent_p50,
        r.recent_change,
        r.recent_verdict,
        r.recent_runs,
        r.recent_sources
    from against_base as b
    left join against_recent as r using (series_digest)
),
-- change points (Otava's, over the whole history) at the head run, each way, with a run after
-- the head in the segment they open: the head alone is what the flag already says
head_change_points as (
    select c.series_digest, sign(c.after_median - c.before_median) as direction, min(c.pvalue) as pvalue
    from fact_change_point as c
    join dim_upstream_revision as r on r.revision_digest = c.revision_digest
    where r.source = 'gh-pages' and r.run = (select head_run from named) and c.after_points > 1
    group by all
),
confirmations as (
    select
        v.series_digest,
        any_value(hc.pvalue) as change_point_pvalue,
        count(l.p50) as later_runs,
        count(l.p50) filter (where confirms(l.p50, v.level, v.flag_threshold, v.adjusted_change)) as confirmed_by
    from (
        select
            f.series_digest,
            f.threshold as flag_threshold,  -- qualified: `threshold` alone is the macro's parameter
            f.adjusted_change,
            case when recent then coalesce(f.recent_p50, f.base_p50) else f.base_p50 end as level
        from verdicts as f
        where is_flag(f.verdict)
    ) as v
    left join later_points((select head_run from named)) as l on l.series_digest = v.series_digest and l.p50 > 0
    left join head_change_points as hc on hc.series_digest = v.series_digest and hc.direction = sign(v.adjusted_change)
    group by v.series_digest
)
select
    v.*,
    c.later_runs,
    c.confirmed_by,
    c.change_point_pvalue,
    confirmation(c.later_runs, c.confirmed_by, c.change_point_pvalue is not null) as confirmation,
    s.commits_between,
    s.suspect_commits
from verdicts as v
left join confirmations as c using (series_digest)
left join run_range_suspects((select base_run from named), (select head_run from named)) as s on s.kernel = v.kernel;
