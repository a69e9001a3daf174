-- restatements: one row per result that upstream no longer shows, with what replaced it.
--
-- `restated_in` is the revision that changed it: the first revision of the same source after
-- the last one that showed it. The replacement is the result of the same series in that
-- revision (the most recently observed one, if several); `reason` is 'replaced' when there is
-- one, 'removed' when that revision dropped the series, and 'withdrawn' when no later revision
-- exists (upstream stopped listing the source, e.g. a deleted gh-pages run, or the import was
-- withdrawn: `liger-warehouse import withdraw`).
-- reads: fact_result, fact_revision_member, results, revision_labels
create or replace view restatements as
with gone as (
    select f.result_digest, f.series_digest, f.source_key, last_seen.seq as last_seq
    from fact_result as f
    join revision_labels as last_seen on last_seen.revision_digest = f.last_revision_digest
    where not f.is_current
),
changed_by as (
    select
        g.result_digest,
        arg_min(n.revision_digest, n.seq) as revision_digest
    from gone as g
    join revision_labels as n on n.source_key = g.source_key and n.seq > g.last_seq
    group by g.result_digest
),
-- What the revisions that changed something held, each with its series: a few revisions, not
-- every membership.
changed_member as (
    select m.revision_digest, f.series_digest, f.result_digest, f.p20, f.p50, f.p80, f.liger_version, f.observed_at
    from fact_revision_member as m
    join fact_result as f using (result_digest)
    where m.revision_digest in (select revision_digest from changed_by)
),
-- A gone result's replacement: the result of its series in the revision that changed it.
replacement as (
    select
        c.result_digest,
        arg_max(
            {
                'result_digest': m.result_digest,
                'p20': m.p20,
                'p50': m.p50,
                'p80': m.p80,
                'liger_version': m.liger_version,
                'observed_at': m.observed_at
            },
            m.observed_at
        ) as new
    from changed_by as c
    join gone as g using (result_digest)
    join changed_member as m on m.revision_digest = c.revision_digest and m.series_digest = g.series_digest
    group by c.result_digest
)
select
    r.*,
    n.label as restated_in,
    n.committed_at as restated_at,
    case
        when rep.new.result_digest is not null then 'replaced'
        when n.label is not null then 'removed'
        else 'withdrawn'
    end as reason,
    rep.new.p20 as replacement_p20,
    rep.new.p50 as replacement_p50,
    rep.new.p80 as replacement_p80,
    rep.new.p50 / nullif(r.p50, 0) as replacement_ratio,
    rep.new.liger_version as replacement_version,
    rep.new.observed_at as replacement_observed_at,
    rep.new.result_digest as replacement_digest
from gone as g
join results as r using (result_digest)
left join changed_by as c using (result_digest)
left join revision_labels as n on n.revision_digest = c.revision_digest
left join replacement as rep using (result_digest)
-- Says again what `gone` holds, so that the scan under `results` skips current results.
where not r.is_current;
