-- speedups: one row per Liger result and baseline result of the same run (`fact_speedup_pair`:
-- one upstream revision showed both, so host drift cancels out), as a ratio. `speedup` > 1 means
-- Liger is better: baseline p50 / Liger p50 for ms and MB. `winner` is 'tie' unless the speedup
-- is beyond the threshold and beyond the pairing's run-to-run noise (`speedup_noise`, see
-- `speedup_winner`). `build` is the build the Liger result stands for (see `result_build`).
-- reads: dim_series, dim_version, fact_speedup_noise, fact_speedup_pair, regression_threshold, speedup, speedup_pool, speedup_winner
create or replace view speedups as
select
    ls.kernel,
    ls.mode,
    s.metric,
    s.unit,
    ls.gpu,
    ls.architecture,
    ls.workload,
    ls.x_name,
    ls.x_value,
    s.liger_version,
    v.version_rank,
    s.build,
    s.liger_provider,
    s.baseline_provider,
    s.backend,
    s.liger_p50,
    s.baseline_p50,
    speedup(s.unit, s.liger_p50, s.baseline_p50) as speedup,
    speedup_winner(
        speedup(s.unit, s.liger_p50, s.baseline_p50),
        coalesce(n.noise, pool.noise),
        1,
        regression_threshold()
    ) as winner,
    coalesce(n.noise, pool.noise) as speedup_noise,
    s.liger_p20,
    s.liger_p80,
    s.baseline_p20,
    s.baseline_p80,
    s.source,
    s.source_key,
    s.revision,
    s.liger_observed_at,
    s.baseline_observed_at,
    s.is_current,
    s.liger_series_digest,
    s.baseline_series_digest,
    s.liger_result_digest,
    s.baseline_result_digest
from fact_speedup_pair as s
-- the Liger series names the kernel, pass, GPU and workload both sides share
join dim_series as ls on ls.series_digest = s.liger_series_digest
left join dim_version as v on v.liger_version = s.liger_version
left join fact_speedup_noise as n using (liger_series_digest, baseline_series_digest)
left join speedup_pool as pool on pool.metric = s.metric;
