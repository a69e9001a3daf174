-- fact_restatement: one row per result that upstream no longer shows: the revision that changed
-- it and the result that replaced it there. A view: only `restatements` reads it.
--
-- The revision that changed a result is the first revision of its source after the last one that
-- showed it; there is none when upstream stopped listing the source (e.g. a deleted gh-pages
-- run) or the import was withdrawn. Its replacement is the result of the same series that this
-- revision holds (the most recently observed one, if several); there is none when the revision
-- dropped the series.
-- reads: dim_upstream_revision, fact_result, fact_revision_member
create or replace view fact_restatement as
with gone as (
    select f.result_digest, f.series_digest, f.source_key, last_seen.seq as last_seq
    from fact_result as f
    join dim_upstream_revision as last_seen on last_seen.revision_digest = f.last_revision_digest
    where not f.is_current
),
changed_by as (
    select
        g.result_digest,
        g.series_digest,
        arg_min(n.revision_digest, n.seq) as revision_digest
    from gone as g
    join dim_upstream_revision as n on n.source_key = g.source_key and n.seq > g.last_seq
    group by g.result_digest, g.series_digest
),
-- What the revisions that changed something held, each with its series: a few revisions, not
-- every membership.
changed_member as (
    select m.revision_digest, f.series_digest, f.result_digest, f.p20, f.p50, f.p80, f.liger_version, f.observed_at
    from fact_revision_member as m
    join fact_result as f using (result_digest)
    where m.revision_digest in (select revision_digest from changed_by)
),
replacement as (
    select
        c.result_digest,
        first(
            {
                'result_digest': m.result_digest,
                'p20': m.p20,
                'p50': m.p50,
                'p80': m.p80,
                'liger_version': m.liger_version,
                'observed_at': m.observed_at
            }
            order by m.observed_at desc, m.result_digest
        ) as new
    from changed_by as c
    join changed_member as m on m.revision_digest = c.revision_digest and m.series_digest = c.series_digest
    group by c.result_digest
)
select
    g.source_key,
    g.result_digest,
    c.revision_digest as restated_revision_digest,
    rep.new.result_digest as replacement_digest,
    rep.new.p20 as replacement_p20,
    rep.new.p50 as replacement_p50,
    rep.new.p80 as replacement_p80,
    rep.new.liger_version as replacement_version,
    rep.new.observed_at as replacement_observed_at
from gone as g
left join changed_by as c using (result_digest)
left join replacement as rep using (result_digest);
