-- run_code_order: one row per gh-pages run, in upload order (upstream's commits.txt: `seq`, then
-- `upload_rank`, runs sharing a place by name) and in the order of the code it benchmarked:
-- `code_committed_at` is its commit's committer date as the compares of consecutive runs show it
-- (`fact_run_compare`), `code_rank` orders by that date, upload order breaking ties. A run is a
-- re-benchmark (`is_rebenchmark`) when its compare with the run uploaded before it
-- (`previous_run`) says `behind`: it benchmarked older code than that run. Without a compare
-- that shows a run, its date, code rank and compare columns are NULL.
-- Materialized at publish (a derived table, recreated whole in the publishing transaction): every
-- comparison places its sides with it.
--     select run, upload_rank, code_rank, compare_status from run_code_order where is_rebenchmark;
-- reads: fact_run_compare, gh_pages_runs
with uploaded as (
    select
        run,
        regexp_extract(run, '^[0-9a-f]+') as commit,
        seq,
        row_number() over (order by seq, run) as upload_rank,
        lag(run) over (order by seq, run) as previous_run
    from gh_pages_runs()
),
dated as (
    select run, max(committed_at) as code_committed_at
    from (
        select head_run as run, head_committed_at as committed_at from fact_run_compare
        union all
        select base_run as run, base_committed_at as committed_at from fact_run_compare
    )
    where committed_at is not null
    group by run
)
select
    u.run,
    u.commit,
    u.seq,
    u.upload_rank,
    d.code_committed_at,
    case
        when d.code_committed_at is not null
            then row_number() over (order by d.code_committed_at nulls last, u.upload_rank)
    end as code_rank,
    u.previous_run,
    c.status as compare_status,
    c.status = 'behind' as is_rebenchmark
from uploaded as u
left join dated as d using (run)
left join fact_run_compare as c on c.base_run = u.previous_run and c.head_run = u.run
order by u.upload_rank;
