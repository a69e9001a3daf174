-- version_steps: each series' version points in release order, with the previous point,
-- on fact_result's narrow columns (no dimensions, no final order): what version_history and
-- regressions are built on. `point` numbers a series' versions from 1.
create or replace view version_steps as
with points as (
    select
        f.result_digest,
        f.series_digest,
        f.protocol_digest,
        f.workload_digest,
        f.environment_digest,
        f.implementation_digest,
        f.metric,
        f.unit,
        f.liger_version,
        v.version_rank,
        f.p20,
        f.p50,
        f.p80,
        f.observed_at,
        f.source,
        f.first_revision_digest,
        s.version_results
    from version_standing as s
    join fact_result as f using (result_digest)
    left join dim_version as v on v.liger_version = f.liger_version
),
ordered as (
    select
        *,
        row_number() over series_order as point,
        lag(liger_version) over series_order as prev_version,
        lag(p20) over series_order as prev_p20,
        lag(p50) over series_order as prev_p50,
        lag(p80) over series_order as prev_p80,
        lag(first_revision_digest) over series_order as prev_revision_digest
    from points
    window series_order as (partition by series_digest order by version_rank)
)
select * from ordered;
