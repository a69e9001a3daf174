-- run_range_suspects(base, head): one row per kernel (every kernel of `dim_workload`) with the code
-- that lies between two gh-pages runs, from GitHub's compares of the consecutive runs (upload
-- order, `run_code_order`) from one to the other (the two in either order give the same ranges).
-- `commits_between`: the distinct commits those compares list; NULL when one of them is missing.
-- Across a re-benchmark (a range `behind`, then one ahead again) the commits the base already
-- held are listed again, and counted: no compare says which they are.
-- `code_changed`: a file of the kernel (`kernel_files`) changed in one of the ranges; NULL when
-- none did but a range is unknown: its compare is missing, or it went back to older code
-- (`behind_by` > 0), whose files the compare does not list.
-- `suspect_commits`: '<7-hex sha> <title>' of the commits that may have changed the kernel, oldest
-- first, each once; empty (not NULL) when none is known. A compare lists the files of its whole
-- range, not of each commit, so within a range that changed a file of the kernel the suspects are
-- the commits whose message names one of the kernel's stems (as a word, underscores aside:
-- `layernorm` and `layer_norm` name `layer_norm`; `softmax` names `softmax`, not
-- `fused_linear_softmax`), or every commit of that range when none does.
-- Runs are named as `run_name` resolves them ('latest', 'previous'); the same run twice: 0 commits;
-- a run the warehouse does not hold (or NULL: a build without runs) leaves every range unknown.
--     select kernel, suspect_commits from run_range_suspects('previous', 'latest') where code_changed;
-- reads: compare_kernels, dim_workload, fact_compare_commit, fact_run_compare, kernel_files, run_code_order, run_name
create or replace macro run_range_suspects(base, head) as table
with ends as (
    select
        min(upload_rank) as first_rank,
        max(upload_rank) as last_rank,
        bool_or(run = run_name(base)) and bool_or(run = run_name(head)) as known
    from run_code_order
    where run in (run_name(base), run_name(head))
),
ranges as (
    select
        o.upload_rank,
        o.previous_run as base_run,
        o.run as head_run,
        c.head_run is not null as held,
        coalesce(c.behind_by > 0, false) as went_back
    from run_code_order as o
    cross join ends as e
    left join fact_run_compare as c on c.base_run = o.previous_run and c.head_run = o.run
    where o.upload_rank > e.first_rank and o.upload_rank <= e.last_rank
),
range_commits as (
    select
        r.upload_rank,
        c.base_run,
        c.head_run,
        c.position,
        c.sha,
        c.title,
        list_transform(string_split_regex(lower(c.message), '[^a-z0-9_]+'), lambda w: replace(w, '_', '')) as words
    from ranges as r
    join fact_compare_commit as c using (base_run, head_run)
),
touched as (
    select c.base_run, c.head_run, c.kernel
    from ranges as r
    join compare_kernels as c using (base_run, head_run)
),
named as (
    select
        t.kernel,
        c.base_run,
        c.head_run,
        c.upload_rank,
        c.position,
        c.sha,
        c.title,
        bool_or(list_contains(c.words, replace(k.stem, '_', ''))) as names_kernel
    from touched as t
    join range_commits as c using (base_run, head_run)
    join kernel_files as k on k.kernel = t.kernel
    group by all
),
chosen as (
    select kernel, sha, any_value(title) as title, min({'range': upload_rank, 'position': position}) as first_seen
    from (
        select *, bool_or(names_kernel) over (partition by kernel, base_run, head_run) as range_names_kernel
        from named
    )
    where names_kernel or not range_names_kernel
    group by kernel, sha
),
suspects as (
    select kernel, list(left(sha, 7) || ' ' || title order by first_seen) as suspect_commits
    from chosen
    group by kernel
),
chain as (
    select
        count(*) filter (where not held) as missing,
        count(*) filter (where went_back) as went_back,
        (select count(distinct sha) from range_commits) as commits,
        coalesce((select known from ends), false) as known
    from ranges
)
select
    k.kernel,
    case when ch.known and ch.missing = 0 then ch.commits::integer end as commits_between,
    case
        when k.kernel in (select kernel from touched) then true
        when not ch.known or ch.missing > 0 or ch.went_back > 0 then null
        else false
    end as code_changed,
    coalesce(s.suspect_commits, []::varchar[]) as suspect_commits
from (select distinct kernel from dim_workload) as k
cross join chain as ch
left join suspects as s using (kernel);
