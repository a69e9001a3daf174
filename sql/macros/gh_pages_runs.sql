-- gh_pages_runs(): one row per gh-pages run with its place in upstream's commits.txt (`seq`; a
-- run listed twice: its first place). Runs sharing a place (one listed between two others later)
-- are ordered by name wherever a series' runs are put in order.
-- reads: dim_upstream_revision
create or replace macro gh_pages_runs() as table
    select run, min(seq) as seq
    from dim_upstream_revision
    where source = 'gh-pages'
    group by run;
