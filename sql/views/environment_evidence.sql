-- environment_evidence: one row per Liger timing series (`metric` = 'speed') and gh-pages run
-- whose step from the run uploaded before it (`previous_run`, `run_code_order`) the series holds,
-- where that step's code is known and left every file of the series' kernel (`kernel_files`) as
-- it was: GitHub's compare of the two runs is held and goes forward (`behind_by` = 0), so the
-- files it lists are all the code that changed, and none is the kernel's. Whatever such a series
-- did in that step, its code did not do.
-- `own_log` and `change_log` are the step's own and raw change (`fact_run_step`); `moved` is
-- 'slower' or 'faster' when the own change is beyond `environment_move` (5%, `verdict_rule()`:
-- the default threshold, fixed so that no session setting moves what is stored from it) and
-- `significance` times the series' noise (`fact_series_noise`), and the raw change goes the same
-- way; else NULL. `environment_shifts` counts these; `fact_environment_step` keeps the steps of
-- the shifts.
-- reads: compare_kernels, dim_series, fact_run_compare, fact_run_step, fact_series_noise, run_code_order, verdict_rule
create or replace view environment_evidence as
with steps as (
    select o.previous_run, o.run, o.upload_rank
    from run_code_order as o
    join fact_run_compare as c on c.base_run = o.previous_run and c.head_run = o.run
    where c.behind_by = 0
)
select
    t.previous_run,
    t.run,
    t.upload_rank,
    r.series_digest,
    s.kernel,
    r.own_log,
    r.change_log,
    case
        when abs(r.own_log) > ln(1 + verdict_rule().environment_move)
            and abs(r.own_log) >= verdict_rule().significance * n.noise
            and sign(r.change_log) = sign(r.own_log)
            then if(r.own_log > 0, 'slower', 'faster')
    end as moved
from steps as t
join fact_run_step as r on r.base_run = t.previous_run and r.head_run = t.run
join dim_series as s using (series_digest)
join fact_series_noise as n using (series_digest)
anti join compare_kernels as c on c.base_run = t.previous_run and c.head_run = t.run and c.kernel = s.kernel
where s.is_liger and s.metric = 'speed' and r.own_log is not null;
