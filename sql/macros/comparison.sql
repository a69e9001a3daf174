-- comparison(pairs, threshold [, steps := false]): one row per series on both sides of each pair
-- of `pairs` (a list of {base_kind, base_key, head_kind, head_key}, sides named as `side_points`
-- names them), in readable columns with the evidence and verdict of `judge`; `base_kind` tells
-- the pairs' rows apart. With `steps := true`, also every series' steps between consecutive
-- builds. `compare_runs` and `compare_versions` are this with the names people type resolved;
-- `regressions` is this over every series' steps. `muted`, `acknowledged`, `acknowledgement` and
-- `annotations` are the triage of each row (`judge`, docs/TRIAGE.md).
-- reads: judge
create or replace macro comparison(pairs, threshold, steps := false) as table
select
    j.series_digest,
    j.kernel,
    j.mode,
    j.provider,
    j.backend,
    j.metric,
    j.unit,
    j.gpu,
    j.architecture,
    j.workload,
    j.x_name,
    j.x_value,
    j.pair.base_kind as base_kind,
    j.pair.base_key as base,
    j.pair.head_key as head,
    j.base_p50,
    j.head_p50,
    j.head_p50 / j.base_p50 as ratio,
    j.change,
    j.drift,
    j.adjusted_change,
    j.sweep_change,
    j.noise,
    j.z,
    j.detectable_change,
    j.environment_change,
    j.verdict,
    j.threshold,
    j.muted,
    j.acknowledged,
    j.acknowledgement,
    j.annotations,
    j.history,
    j.base_runs,
    j.head_runs,
    j.base_sources,
    j.head_sources,
    j.base_p20,
    j.base_p80,
    j.head_p20,
    j.head_p80
from judge(pairs, threshold, steps := steps) as j;
