-- version_history: one row per series and version point, in release order, with the previous
-- point and the change.
--
-- Release order is semantic (`dim_version.version_rank`: 0.5.10 after 0.5.9, 0.7.0rc1 before
-- 0.7.0). `point` numbers a series' versions from 1; `ratio` is p50 / previous p50 and
-- `change` the same as a fraction (0.10 = 10% higher).
create or replace view version_history as
with ordered as (
    select
        *,
        row_number() over series_order as point,
        lag(liger_version) over series_order as prev_version,
        lag(p20) over series_order as prev_p20,
        lag(p50) over series_order as prev_p50,
        lag(p80) over series_order as prev_p80,
        lag(revision) over series_order as prev_revision
    from version_points
    window series_order as (partition by series_digest order by version_rank)
)
select
    series_digest,
    kernel,
    mode,
    provider,
    backend,
    metric,
    unit,
    gpu,
    architecture,
    workload,
    x_name,
    x_value,
    config_json,
    point,
    liger_version,
    version_rank,
    p20,
    p50,
    p80,
    observed_at,
    source,
    revision,
    version_results,
    prev_version,
    prev_p20,
    prev_p50,
    prev_p80,
    prev_revision,
    p50 / nullif(prev_p50, 0) as ratio,
    p50 / nullif(prev_p50, 0) - 1 as change,
    result_digest
from ordered
order by series_digest, version_rank;
