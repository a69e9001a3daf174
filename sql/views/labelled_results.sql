-- labelled_results: one row per result ever published: the columns of `fact_result`, its series
-- in readable columns (`dim_series`) and the labels of the revisions that first and last showed
-- it. The join the result views share: `results` and `speedups` read it.
-- reads: dim_series, fact_result, revision_labels
create or replace view labelled_results as
select
    f.*,
    s.kernel,
    s.mode,
    s.provider,
    s.backend,
    s.gpu,
    s.architecture,
    s.workload,
    s.x_name,
    s.x_value,
    s.config_json,
    s.is_liger,
    first_seen.label as revision,
    first_seen.seq as revision_seq,
    first_seen.committed_at as revision_committed_at,
    last_seen.label as last_revision
from fact_result as f
join dim_series as s using (series_digest)
left join revision_labels as first_seen on first_seen.revision_digest = f.first_revision_digest
left join revision_labels as last_seen on last_seen.revision_digest = f.last_revision_digest;
