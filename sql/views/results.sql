-- results: one row per result ever published, in readable columns.
--
-- A result is one distinct upstream row within one source: a main-branch CSV path or a
-- gh-pages run (`source_key`). `revision` is the upstream revision that first showed it (the
-- commit sha on main, the run name on gh-pages), `last_revision` the last one, and
-- `is_current` says whether upstream still shows it today. A series (`series_digest`) is the
-- same kernel, mode, provider, backend, metric, GPU and workload across versions and sources.
-- reads: dim_version, dim_workload, labelled_results
create or replace view results as
select
    r.result_digest,
    r.series_digest,
    r.kernel,
    r.mode,
    r.provider,
    r.backend,
    r.metric,
    r.unit,
    r.gpu,
    r.architecture,
    r.x_name,
    w.x_label,
    r.x_value,
    r.workload,
    r.config_json,
    r.liger_version,
    v.version_rank,
    r.p20,
    r.p50,
    r.p80,
    r.observed_at,
    r.source,
    r.source_key,
    r.revision,
    r.revision_seq,
    r.revision_committed_at,
    r.last_revision,
    r.is_current,
    r.is_liger
from labelled_results as r
join dim_workload as w using (workload_digest)
left join dim_version as v on v.liger_version = r.liger_version;
