-- regressions: one row per pair of consecutive builds of a series (see `dim_build`), with the
-- change, its evidence and a verdict (docs/VERDICTS.md).
--
-- `verdict` is 'regression' or 'improvement' only when the change exceeds the threshold
-- (`regression_threshold()`, 5% unless `set variable regression_threshold = ...`) raw and once
-- the baselines' drift is taken out, and stands out from the series' run-to-run noise;
-- 'unchanged' when a change beyond max(threshold, 25%) is ruled out; else 'inconclusive'.
-- Lower is better for ms and MB. `ratio` is head p50 / base p50.
-- reads: comparison, regression_threshold
create or replace view regressions as
select * exclude (base_kind) rename (base as base_version, head as head_version)
from comparison([], regression_threshold(), steps := true);
