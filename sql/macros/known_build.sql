-- known_build(text): the build (see `dim_build`) that `build_name(text)` resolves to, or an
-- error when the warehouse holds no such build, naming the releases it holds and how to list
-- every build: a comparison with a build that does not exist is a mistake to say, not 0 rows.
--     select known_build('9.9.9');  -- unknown build '9.9.9'; the warehouse holds, oldest first: 0.1.1, ...
-- reads: build_name, dim_build
create or replace macro known_build(text) as
    coalesce(
        (select build from dim_build where build = build_name(text)),
        error(format(
            'unknown build ''{}''; the warehouse holds, oldest first: {} (and ''latest'', ''previous'', '
            || 'a gh-pages run or a nightly build: select build from dim_build)',
            coalesce(text, ''),
            coalesce(
                (select string_agg(build, ', ' order by build_rank) from dim_build where build_kind = 'release'),
                'nothing yet'
            )
        ))
    );
