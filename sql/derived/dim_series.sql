-- dim_series: one row per series, in readable columns, with the keys the verdicts group it by.
-- Materialized at publish (a derived table, recreated whole in the publishing transaction).
--
-- A series is the same kernel, pass, provider, backend, metric, GPU and workload across
-- versions and sources (`series_digest`). Its *sweep* is every workload of the same kernel,
-- pass, provider, backend, metric and GPU (the x-axis sweep upstream runs in one go); its
-- *kernel* is the sweep without the provider; its *point* is the kernel at its workload (what a
-- Liger series and a baseline share when they are paired); its *host* is the GPU and metric. Verdicts take
-- medians over these groups (docs/VERDICTS.md).
-- Every result of a series has the same protocol, workload, GPU, provider and backend: any
-- one of them names the series.
-- reads: dim_environment, dim_implementation, dim_protocol, dim_workload, fact_result
with named as (
    select
        series_digest,
        any_value(protocol_digest) as protocol_digest,
        any_value(workload_digest) as workload_digest,
        any_value(environment_digest) as environment_digest,
        any_value(implementation_digest) as implementation_digest,
        any_value(metric) as metric,
        any_value(unit) as unit
    from fact_result
    group by series_digest
)
select
    n.series_digest,
    w.kernel,
    p.timed_pass as mode,
    i.provider,
    i.backend,
    n.metric,
    n.unit,
    e.gpu_name as gpu,
    e.architecture,
    w.slug as workload,
    w.x_name,
    w.x_value,
    w.config_json,
    starts_with(i.provider, 'liger') as is_liger,
    concat_ws('|', n.protocol_digest, w.kernel, n.environment_digest, i.provider, coalesce(i.backend, '')) as sweep_key,
    concat_ws('|', n.protocol_digest, w.kernel, n.environment_digest) as kernel_key,
    concat_ws('|', n.protocol_digest, n.workload_digest, n.environment_digest) as point_key,
    concat_ws('|', n.environment_digest, n.metric, n.unit) as host_key
from named as n
join dim_protocol as p using (protocol_digest)
join dim_workload as w using (workload_digest)
join dim_environment as e using (environment_digest)
join dim_implementation as i using (implementation_digest)
order by series_digest;
