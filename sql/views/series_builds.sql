-- series_builds: one row per series and build that has a point of it (`fact_build_point`), in
-- release order (`dim_build.build_rank`): `point` numbers a series' builds from 1, `prev_build` is
-- the build before (null on the first). Consecutive builds are the steps fact_build_step stores.
-- reads: dim_build, fact_build_point
create or replace view series_builds as
select
    p.series_digest,
    p.build,
    b.build_rank,
    row_number() over series_order as point,
    lag(p.build) over series_order as prev_build
from fact_build_point as p
join dim_build as b using (build)
window series_order as (partition by p.series_digest order by b.build_rank);
