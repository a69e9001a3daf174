-- run_history: one row per series and gh-pages run, with the previous run's point and the
-- change. These are the points `change_points` is computed from.
--
-- Run order is upstream's commits.txt order (`run_seq`; `order by series_digest, run_seq`
-- reads a series' history in it). When one run holds several results of a series, the most
-- recently observed one stands for it: the run points are `fact_run_point`'s, and the Liger
-- version is that of the build the run stands for (`dim_build`).
-- reads: dim_build, dim_series, fact_run_point
create or replace view run_history as
with ordered as (
    select
        *,
        row_number() over series_order - 1 as point_index,
        count(*) over (partition by series_digest) as points,
        lag(run) over series_order as prev_run,
        lag(p50) over series_order as prev_p50
    from fact_run_point
    window series_order as (partition by series_digest order by run_seq)
)
select
    o.series_digest,
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
    o.point_index,
    o.points,
    o.run,
    o.run_seq,
    b.liger_version,
    o.p20,
    o.p50,
    o.p80,
    o.observed_at,
    o.prev_run,
    o.prev_p50,
    o.p50 / nullif(o.prev_p50, 0) - 1 as change,
    o.result_digest
from ordered as o
join dim_series as s using (series_digest)
join dim_build as b using (build);
