-- results: one row per result ever published, in readable columns.
--
-- A result is one distinct upstream row within one source: a main-branch CSV path or a
-- gh-pages run (`source_key`). `revision` is the upstream revision that first showed it (the
-- commit sha on main, the run name on gh-pages), `last_revision` the last one, and
-- `is_current` says whether upstream still shows it today. A series (`series_digest`) is the
-- same kernel, mode, provider, backend, metric, GPU and workload across versions and sources.
create or replace view results as
with revision as (
    select revision_digest, coalesce(run, commit) as label, seq, committed_at
    from dim_upstream_revision
)
select
    f.result_digest,
    f.series_digest,
    w.kernel,
    p.timed_pass as mode,
    i.provider,
    i.backend,
    f.metric,
    f.unit,
    e.gpu_name as gpu,
    e.architecture,
    w.x_name,
    w.x_label,
    w.x_value,
    w.slug as workload,
    w.config_json,
    f.liger_version,
    v.version_rank,
    f.p20,
    f.p50,
    f.p80,
    f.observed_at,
    f.source,
    f.source_key,
    first_seen.label as revision,
    first_seen.seq as revision_seq,
    first_seen.committed_at as revision_committed_at,
    last_seen.label as last_revision,
    f.is_current,
    starts_with(i.provider, 'liger') as is_liger
from fact_result as f
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
left join dim_version as v on v.liger_version = f.liger_version
left join revision as first_seen on first_seen.revision_digest = f.first_revision_digest
left join revision as last_seen on last_seen.revision_digest = f.last_revision_digest;
