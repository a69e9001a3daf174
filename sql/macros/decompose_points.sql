-- decompose_points(pairs): one row per series present on both sides of each pair of `pairs`, with
-- the change between them split into what the verdict judges (docs/VERDICTS.md), computed from
-- the points. `decompose` is this with the pairs of consecutive builds read from `fact_build_step`.
--
-- `pairs` is a list of {base_kind, base_key, head_kind, head_key}, sides as `side_points` names
-- them. Each row carries its series' kernel and GPU, as `fact_build_step` stores it. All changes
-- are natural logs of head p50 / base p50:
--   change_log      the raw change;
--   drift_log       host drift: the median change of the baselines (providers Liger does not
--                   control) on the same GPU and metric;
--   adjusted_log    change_log - drift_log;
--   kernel_drift_log  for a Liger series, the median adjusted change of the same kernel's
--                   baselines (the rest of that kernel's benchmark moved with it);
--   own_log         the change that is the series' own: adjusted_log, less kernel_drift_log
--                   for a Liger series whose kernel has baselines;
--   sweep_log       the median adjusted change of the series' sweep (same kernel, pass,
--                   provider, metric and GPU, every workload), `sweep_own_log` the same less
--                   the kernel drift: how the whole sweep moved;
--   residual_log    adjusted_log - sweep_log: how this workload moved against its sweep.
-- reads: dim_series, fact_build_point, fact_recent_point, fact_run_point, judgeable
create or replace macro decompose_points(pairs) as table
-- Each pair is numbered (`pair_id`): a number is cheaper to group and join on than the struct of
-- four strings, which the result carries only once per row, at the end.
with wanted as (
    select pair, row_number() over () as pair_id
    from (select distinct unnest(pairs) as pair)
),
-- Each end of each pair, so that each table of points is read (and bound) once for both ends.
pair_end as (
    select pair_id, true as is_base, pair.base_kind as side_kind, pair.base_key as side_key from wanted
    union all
    select pair_id, false, pair.head_kind, pair.head_key from wanted
),
-- The points of each end, one join per kind of side: a stored table joined alone with the few
-- keys asked is pruned to their row groups (its files are sorted by key), where one join with
-- the union `side_points` read all three tables whole. Columns as `side_points` has them.
end_points as (
    select e.pair_id, e.is_base, p.series_digest, p.p20, p.p50, p.p80, 1 as runs, [p.run] as sources
    from pair_end as e
    join fact_run_point as p on e.side_kind = 'run' and p.run = e.side_key
    union all
    select e.pair_id, e.is_base, p.series_digest, p.p20, p.p50, p.p80, p.runs, p.sources
    from pair_end as e
    join fact_recent_point as p on e.side_kind = 'recent' and p.run = e.side_key
    union all
    select e.pair_id, e.is_base, p.series_digest, p.p20, p.p50, p.p80, p.runs, p.sources
    from pair_end as e
    join fact_build_point as p on e.side_kind = 'build' and p.build = e.side_key
),
-- A series on both ends of a pair (an end holds at most one point of a series), its two ends
-- grouped into one row rather than joined: DuckDB estimated that self-join at 10^12 rows, and
-- the windows below sized their partitions by the estimate (0.2 s and 0.7 GB for one pair of a
-- few thousand series).
paired as (
    select
        e.pair_id,
        s.series_digest,
        s.is_liger,
        s.sweep_key,
        s.kernel_key,
        s.host_key,
        s.kernel,
        s.gpu,
        e.base_p20,
        e.base_p50,
        e.base_p80,
        e.base_runs,
        e.base_sources,
        e.head_p20,
        e.head_p50,
        e.head_p80,
        e.head_runs,
        e.head_sources,
        ln(e.head_p50 / e.base_p50) as change_log
    from (
        select
            pair_id,
            series_digest,
            any_value(p20) filter (where is_base) as base_p20,
            any_value(p50) filter (where is_base) as base_p50,
            any_value(p80) filter (where is_base) as base_p80,
            any_value(runs) filter (where is_base) as base_runs,
            any_value(sources) filter (where is_base) as base_sources,
            any_value(p20) filter (where not is_base) as head_p20,
            any_value(p50) filter (where not is_base) as head_p50,
            any_value(p80) filter (where not is_base) as head_p80,
            any_value(runs) filter (where not is_base) as head_runs,
            any_value(sources) filter (where not is_base) as head_sources
        from end_points
        group by pair_id, series_digest
    ) as e
    join dim_series as s on s.series_digest = e.series_digest
    -- a series on one end only has no p50 on the other: not judgeable
    where judgeable(e.base_p50) and judgeable(e.head_p50)
),
-- Each median below is a window over its group of a pair's rows, not a grouped CTE joined back.
adjusted as (
    select
        *,
        coalesce(median(change_log) filter (where not is_liger) over (partition by pair_id, host_key), 0) as drift_log,
        change_log - drift_log as adjusted_log
    from paired
),
-- A baseline's change is its own; a Liger series' change is its own once its kernel's
-- baselines are taken out.
attributed as (
    select
        *,
        median(adjusted_log) filter (where not is_liger) over (partition by pair_id, kernel_key) as kernel_median_log,
        case when is_liger then kernel_median_log end as kernel_drift_log,
        median(adjusted_log) over (partition by pair_id, sweep_key) as sweep_log,
        count(*) over (partition by pair_id, sweep_key) as sweep_series,
        case when is_liger then coalesce(kernel_median_log, 0) else 0 end as taken_out_log
    from adjusted
)
select
    w.pair,
    a.* exclude (pair_id, kernel_median_log, taken_out_log),
    a.adjusted_log - a.taken_out_log as own_log,
    a.sweep_log - a.taken_out_log as sweep_own_log,
    a.adjusted_log - a.sweep_log as residual_log
from attributed as a
join wanted as w using (pair_id);
