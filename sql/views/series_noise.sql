-- series_noise: one row per series, in readable columns, with its run-to-run noise, the
-- smallest change one run against one run can call and the run steps it was read from
-- (`fact_series_noise`, docs/VERDICTS.md). The noisiest benchmarks guard nothing:
--     select kernel, mode, provider, gpu, workload, detectable_change from series_noise
--     where is_liger and metric = 'speed' order by detectable_change desc;
-- reads: dim_series, fact_series_noise
create or replace view series_noise as
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
    s.is_liger,
    n.history,
    n.noise,
    n.detectable_change,
    n.residual_noise,
    n.sweep_noise,
    n.residual_spread,
    n.sweep_spread,
    n.sweep_history
from fact_series_noise as n
join dim_series as s using (series_digest);
