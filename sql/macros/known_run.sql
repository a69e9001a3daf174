-- known_run(text): the gh-pages run that `run_name(text)` resolves to, or an error when the
-- warehouse holds no such run, naming the newest runs it holds and how to list them all: a
-- comparison with a run that does not exist is a mistake to say, not 0 rows.
--     select known_run('nosuchrun');  -- unknown run 'nosuchrun'; the warehouse holds, newest first: ...
-- reads: dim_upstream_revision, run_name
create or replace macro known_run(text) as
    coalesce(
        (select any_value(run) from dim_upstream_revision where source = 'gh-pages' and run = run_name(text)),
        error(format(
            'unknown run ''{}''; the warehouse holds, newest first: {} (and ''latest'', ''previous''; '
            || 'every run: select run from dim_upstream_revision where source = ''gh-pages'')',
            coalesce(text, ''),
            (
                select coalesce(array_to_string(list(run order by seq desc)[1:12], ', '), 'nothing yet')
                    || if(count(*) > 12, ', …', '')
                from (select run, min(seq) as seq from dim_upstream_revision where source = 'gh-pages' group by run)
            )
        ))
    );
