-- run_name(text): the gh-pages run a user means: a run name as upstream writes it
-- ('7644a0f', '7644a0f-v0.7.0'), or 'latest' / 'previous' for the newest and the one before
-- it among the runs upstream still lists.
-- reads: dim_upstream_revision
create or replace macro run_name(text) as
    case lower(trim(text))
        when 'latest' then (
            select run from dim_upstream_revision
            where source = 'gh-pages' and is_upstream
            order by seq desc limit 1
        )
        when 'previous' then (
            select run from dim_upstream_revision
            where source = 'gh-pages' and is_upstream
            order by seq desc limit 1 offset 1
        )
        else trim(text)
    end;
