-- later_points(after_run): one row per series and gh-pages run after `after_run` in upstream's order that
-- holds the series, the first `verdict_rule().confirm_runs` of them: its p50 there and the
-- place (`later_rank`, 1 = the next run holding it). What confirms or takes back a flag on `after_run`.
--     select * from later_points('4444fdf') where later_rank = 1;
-- reads: fact_run_point, gh_pages_runs, verdict_rule
create or replace macro later_points(after_run) as table
select p.series_digest, p.run, p.p50, row_number() over (partition by p.series_digest order by g.seq, g.run) as later_rank
from fact_run_point as p
join gh_pages_runs() as g on g.run = p.run
where g.seq > (select min(seq) from gh_pages_runs() where run = after_run)
qualify later_rank <= verdict_rule().confirm_runs;
