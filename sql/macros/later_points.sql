-- later_points(after_run): one row per series and gh-pages run after `after_run` in upstream's order that
-- holds the series, the first `verdict_rule().confirm_runs` of them: its p50 there and the
-- place (`later_rank`, 1 = the next run holding it). What confirms or takes back a flag on `after_run`.
--     select * from later_points('4444fdf') where later_rank = 1;
-- reads: fact_run_point, run_code_order, verdict_rule
create or replace macro later_points(after_run) as table
select p.series_digest, p.run, p.p50, row_number() over (partition by p.series_digest order by o.upload_rank) as later_rank
from fact_run_point as p
join (
    -- one read of the runs: each run with the place of `after_run`
    select run, upload_rank, max(upload_rank) filter (where run = after_run) over () as after_rank
    from run_code_order
) as o on o.run = p.run
where o.upload_rank > o.after_rank
qualify later_rank <= verdict_rule().confirm_runs;
