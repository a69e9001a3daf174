-- side_points: what stands for a series on one side of a comparison: a gh-pages run
-- (`side_kind` 'run', `side_key` the run name: `fact_run_point`), a run's recent level
-- (`side_kind` 'recent', `side_key` the run name: `fact_recent_point`) or a build (`side_kind`
-- 'build', `side_key` the build label: `fact_build_point`), with the runs it stands on.
-- `decompose_points` reads the three tables as this view does, with one join each.
-- reads: fact_build_point, fact_recent_point, fact_run_point
create or replace view side_points as
select
    'run' as side_kind,
    run as side_key,
    series_digest,
    p20,
    p50,
    p80,
    1 as runs,
    [run] as sources,
    observed_at
from fact_run_point
union all
select
    'recent',
    run,
    series_digest,
    p20,
    p50,
    p80,
    runs,
    sources,
    observed_at
from fact_recent_point
union all
select
    'build',
    build,
    series_digest,
    p20,
    p50,
    p80,
    runs,
    sources,
    observed_at
from fact_build_point;
