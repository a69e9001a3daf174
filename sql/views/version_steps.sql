-- version_steps: each series' builds in release order (`dim_build.build_rank`), each with the
-- previous build that has a point of the series and the judged step from it (`series_history`, at
-- the session's `regression_threshold()`). Of the judged step it carries only the change, its
-- evidence and the verdict (a view read whole pays for every column it carries; version_history
-- has the rest). `point` numbers a series' builds from 1; the first has no step.
-- reads: dim_build, regression_threshold, series_history
create or replace view version_steps as
select
    h.series_digest,
    h.build,
    b.build_rank,
    h.point,
    h.prev_build,
    h.base_p50,
    h.head_p50,
    h.change,
    h.drift,
    h.adjusted_change,
    h.noise,
    h.z,
    h.verdict
from series_history(regression_threshold()) as h
join dim_build as b using (build);
