-- restatements: one row per result that upstream no longer shows, with what replaced it.
--
-- `restated_in` is the revision that changed it: the first revision of the same source after
-- the last one that showed it. The replacement is the result of the same series in that
-- revision (the most recently observed one, if several); `reason` is 'replaced' when there is
-- one, 'removed' when that revision dropped the series, and 'withdrawn' when no later revision
-- exists (upstream stopped listing the source, e.g. a deleted gh-pages run, or the import was
-- withdrawn: `liger-warehouse import withdraw`). Both are looked up at publish
-- (`fact_restatement`).
-- reads: fact_restatement, results, revision_labels
create or replace view restatements as
select
    r.*,
    n.label as restated_in,
    n.committed_at as restated_at,
    case
        when g.replacement_digest is not null then 'replaced'
        when n.label is not null then 'removed'
        else 'withdrawn'
    end as reason,
    g.replacement_p20,
    g.replacement_p50,
    g.replacement_p80,
    g.replacement_p50 / nullif(r.p50, 0) as replacement_ratio,
    g.replacement_version,
    g.replacement_observed_at,
    g.replacement_digest
from fact_restatement as g
join results as r using (result_digest)
left join revision_labels as n on n.revision_digest = g.restated_revision_digest
-- Says again what `fact_restatement` holds, so that the scan under `results` skips current results.
where not r.is_current;
