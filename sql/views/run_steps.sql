-- run_steps: one row per series and pair of consecutive gh-pages runs that hold it (in
-- upstream's commits.txt order), with the change decomposed as `decompose_points` does, its
-- `pair` as `decompose_points` names one. This is the history each series' noise is read from
-- (`series_noise`); stored at publish in `fact_run_step`.
-- reads: fact_run_step
create or replace view run_steps as
select
    {'base_kind': 'run', 'base_key': base_run, 'head_kind': 'run', 'head_key': head_run} as pair,
    * exclude (base_run, head_run)
from fact_run_step;
