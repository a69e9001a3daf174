-- run_name(text): the gh-pages run a user means: a run name as upstream writes it
-- ('7644a0f', '7644a0f-v0.7.0'), or 'latest' / 'previous' for the newest and the one before
-- it among the runs upstream still lists.
-- reads: dim_upstream_revision
create or replace macro run_name(text) as
    case
        -- one read of the newest two runs for either name (each table reference is a read)
        when lower(trim(text)) in ('latest', 'previous') then (
            select list(run order by seq desc)
            from (
                select run, seq from dim_upstream_revision
                where source = 'gh-pages' and is_upstream
                order by seq desc limit 2
            )
        )[if(lower(trim(text)) = 'latest', 1, 2)]
        else trim(text)
    end;
