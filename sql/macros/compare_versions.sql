-- compare_versions(base, head [, threshold := 0.05]): one row per series with a point in both
-- builds, with the evidence and the verdict (docs/VERDICTS.md).
--
-- A release stands on its own runs (the release run and other runs of its commit; a series
-- they lack, on the main-branch rows of the version): the median of all of them, `base_runs` /
-- `head_runs` counting them and `base_sources` / `head_sources` naming them. Nightlies are
-- builds of their own (`0.6.4+20251212.49e6353`, see `builds`). Builds may be written '0.7.0',
-- 'v0.7.0', '7644a0f-v0.7.0', as any gh-pages run, as a build label, or 'latest' / 'previous';
-- a name the warehouse holds no build for is an error listing the releases (`known_build`).
-- `threshold` is a fraction; without it the session's `regression_threshold()` (5%) applies.
--     select * from compare_versions('0.6.3', '0.7.0') where verdict = 'regression';
-- The code between two builds is that between their newest runs (`dim_build.last_run`), the run
-- ranges chained: `commits_between` and `suspect_commits` as `run_range_suspects` gives them (none
-- known for a build without gh-pages runs).
-- reads: comparison, dim_build, known_build, regression_threshold, run_range_suspects
create or replace macro compare_versions(base, head, threshold := 'session') as table
select
    c.* exclude (base_kind, base, head),
    -- the builds the names resolved to (qualified: a bare `base` is the macro's argument)
    c.base as base_version,
    c.head as head_version,
    s.commits_between,
    s.suspect_commits
from comparison(
    [{'base_kind': 'build', 'base_key': known_build(base), 'head_kind': 'build', 'head_key': known_build(head)}],
    coalesce(try_cast(threshold as double), regression_threshold())
) as c
left join run_range_suspects(
    (select last_run from dim_build where build = known_build(base)),
    (select last_run from dim_build where build = known_build(head))
) as s on s.kernel = c.kernel;
