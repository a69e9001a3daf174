-- regressions: one row per pair of consecutive version points of a series, with a verdict.
--
-- `verdict` is 'regression' or 'improvement' only when p50 moved by more than the threshold
-- (`regression_threshold()`, 5% unless `set variable regression_threshold = ...`) AND the
-- base and head p20-p80 bands do not overlap; otherwise 'unchanged'. Lower is better for ms
-- and MB. `ratio` is head p50 / base p50.
create or replace view regressions as
with settings as (
    select regression_threshold() as threshold
),
steps as (
    select *
    from version_history
    where prev_version is not null
)
select
    s.series_digest,
    s.kernel,
    s.mode,
    s.provider,
    s.backend,
    s.metric,
    s.unit,
    s.gpu,
    s.architecture,
    s.workload,
    s.x_name,
    s.x_value,
    s.prev_version as base_version,
    s.liger_version as head_version,
    s.prev_p50 as base_p50,
    s.p50 as head_p50,
    s.ratio,
    s.change,
    verdict(s.prev_p20, s.prev_p50, s.prev_p80, s.p20, s.p50, s.p80, s.unit, t.threshold) as verdict,
    t.threshold,
    s.prev_p20 as base_p20,
    s.prev_p80 as base_p80,
    s.p20 as head_p20,
    s.p80 as head_p80,
    s.prev_revision as base_revision,
    s.revision as head_revision
from steps as s
cross join settings as t
order by s.series_digest, s.version_rank;
