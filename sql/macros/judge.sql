-- judge(pairs, threshold [, steps := false]): `decompose(pairs, steps)` with each series' noise,
-- its labels (`dim_series`: kernel, mode, provider, backend, metric, unit, GPU, architecture,
-- workload, x) and the verdict: one row per pair and series on both sides, carrying the evidence
-- the verdict was reached on. Kernel and GPU come with the steps (`decompose_points`), so that a
-- filter on them reaches the scan of the stored steps; the other labels are joined here, on the
-- steps as they are read, so that a filter on them drops the other series' steps at that join,
-- before their noise and verdict are computed. `head_point` (from the stored steps) numbers the
-- head among the series' builds on a series' own step, null on other rows.
--
-- Changes are fractions (0.10 = 10% higher): `change` is the raw change of p50, `drift` what the
-- baselines explain of it (host drift, plus the kernel's own baselines for a Liger series),
-- `adjusted_change` the rest, `sweep_change` how the whole sweep moved (less drift). `noise` is
-- the series' run-to-run noise scaled for the runs on each side (`base_runs`, `head_runs`): a
-- median of n runs is steadier than one run. `z` is the adjusted change in units of that noise.
-- `environment_change` is what the series moved in the environment shifts between the two sides
-- (`fact_environment_step`; a build's side ends at its newest run): a change it explains is
-- 'environment' (`environment_verdict`); NULL when no shift lies between them.
--
-- Triage (`series_triage`, docs/TRIAGE.md): a series with a threshold of its own (the series', else
-- its sweep's, else its kernel's) is judged at it instead of `threshold`, and `threshold` shows
-- it; `muted` says a mute reaches the series (it is judged all the same); `acknowledged` and
-- `acknowledgement` are the kind and note of the newest acknowledgement of a run between the
-- sides; `annotations` the notes on the series' whole history or on a run between the sides.
-- reads: decompose, dim_build, dim_series, environment_verdict, fact_build_step, fact_environment_step, fact_series_noise, run_code_order, series_triage, verdict
create or replace macro judge(pairs, threshold, steps := false) as table
with judged as (
    select
        d.*,
        n.history,
        n.pooled,
        n.residual_noise,
        n.sweep_noise,
        n.own_noise,
        n.detectable_change,
        sqrt((1.0 / d.base_runs + 1.0 / d.head_runs) / 2) as noise_scale,
        s.mode,
        s.provider,
        s.backend,
        s.metric,
        s.unit,
        s.architecture,
        s.workload,
        s.x_name,
        s.x_value,
        coalesce(t.own_threshold, threshold) as series_threshold,
        coalesce(t.muted, false) as muted,
        t.acks,
        t.notes
    from decompose(pairs, steps := steps) as d
    join fact_series_noise as n using (series_digest)
    join dim_series as s using (series_digest)
    -- renamed, qualified: a column named `threshold` in scope would clash with the parameter
    -- the few series triage reaches: most rows carry nothing through this join
    left join (
        select * from series_triage where muted or own_threshold is not null or len(acks) > 0 or len(notes) > 0
    ) as t using (series_digest)
),
-- each pair's sides as places in upload order: a run, a recent level's run, a build's newest run
pair_ranks as (
    select p.pair, b.upload_rank as base_rank, h.upload_rank as head_rank
    from (
        -- the pairs asked for and, with `steps`, every stored step's: not read from `judged`, whose
        -- second reader would make DuckDB compute it whole, under no filter of the caller's
        select unnest(pairs) as pair
        union
        select {'base_kind': 'build', 'base_key': base_build, 'head_kind': 'build', 'head_key': head_build}
        from fact_build_step
        where steps and consecutive
    ) as p
    left join dim_build as bb on p.pair.base_kind = 'build' and bb.build = p.pair.base_key
    left join dim_build as hb on p.pair.head_kind = 'build' and hb.build = p.pair.head_key
    left join run_code_order as b on b.run = if(p.pair.base_kind = 'build', bb.last_run, p.pair.base_key)
    left join run_code_order as h on h.run = if(p.pair.head_kind = 'build', hb.last_run, p.pair.head_key)
),
environment as (
    select
        r.pair,
        e.series_digest,
        -- summed in upload order, the same bits whatever plan DuckDB picks; a head older than
        -- its base meets the shifts backwards
        sum(e.own_log order by e.upload_rank) * sign(r.head_rank - r.base_rank) as environment_log
    from pair_ranks as r
    join fact_environment_step as e
        on e.upload_rank > least(r.base_rank, r.head_rank) and e.upload_rank <= greatest(r.base_rank, r.head_rank)
    group by r.pair, e.series_digest, r.head_rank, r.base_rank
)
select
    j.* exclude (pooled, series_threshold, acks, notes),
    exp(j.change_log) - 1 as change,
    exp(j.change_log - j.own_log) - 1 as drift,
    exp(j.own_log) - 1 as adjusted_change,
    exp(j.sweep_own_log) - 1 as sweep_change,
    sqrt(j.sweep_noise ^ 2 + j.residual_noise ^ 2) * j.noise_scale as noise,
    j.own_log / nullif(sqrt(j.sweep_noise ^ 2 + j.residual_noise ^ 2) * j.noise_scale, 0) as z,
    exp(e.environment_log) - 1 as environment_change,
    j.series_threshold as threshold,
    environment_verdict(
        verdict(
            j.change_log, j.adjusted_log, j.own_log, j.sweep_own_log, j.residual_log, j.sweep_noise,
            j.residual_noise, j.own_noise, j.history, j.pooled, j.noise_scale, j.unit, j.series_threshold
        ),
        j.own_log, e.environment_log, sqrt(j.sweep_noise ^ 2 + j.residual_noise ^ 2) * j.noise_scale, j.series_threshold
    ) as verdict,
    -- the newest acknowledgement of a run between the sides; the notes on the series' whole
    -- history or on a run between them (most series have neither)
    case when j.acks is not null then list_filter(j.acks, lambda a: a.upload_rank > r.low and a.upload_rank <= r.high)[-1] end as ack,
    struct_extract(ack, 'kind') as acknowledged,
    struct_extract(ack, 'note') as acknowledgement,
    case
        when j.notes is not null
            then [n.note for n in j.notes if n.whole or (n.first_rank <= r.high and n.last_rank > r.low)]
        else []
    end as annotations
from judged as j
left join environment as e on e.pair = j.pair and e.series_digest = j.series_digest
left join (
    select pair, least(base_rank, head_rank) as low, greatest(base_rank, head_rank) as high from pair_ranks
) as r on r.pair = j.pair;
