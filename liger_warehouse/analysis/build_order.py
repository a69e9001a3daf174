"""The builds a refresh appends, and the order of their series' builds.

``fact_build_step`` pairs each series' consecutive builds in release order (``series_builds``: a
window over every build point). A refresh usually touches only the newest build (a nightly run
adds one); when every build it touches ranks after every other build, the other builds keep
their pairs, and a touched build's series step from their latest other build. So only the
touched builds' series are ordered (``APPENDED_SERIES_BUILDS``), not the whole history.
Otherwise every build is ordered, and the heads derived again are those ``REDONE_HEADS`` finds.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

# ``series_builds``' rows for the series of ``touched_build`` when those builds rank after every other:
# their points, each series' latest point in another build, and the step between them; `point`
# counts on from the series' points in the other builds. Each side reads the build points on its
# own: a CTE of every point read by both would be materialized whole (at 10^7 results, 10M build
# points: 3.4-5.8 s against 1.3-1.6 s).
APPENDED_SERIES_BUILDS = """
with head as (
    select p.series_digest, p.build, b.build_rank, 0 as before
    from fact_build_point as p
    join dim_build as b using (build)
    where p.build in (select build from touched_build)
),
latest as (
    select
        p.series_digest,
        max_by(p.build, b.build_rank) as build,
        max(b.build_rank) as build_rank,
        count(*) - 1 as before
    from fact_build_point as p
    join dim_build as b using (build)
    where p.build not in (select build from touched_build) and p.series_digest in (select series_digest from head)
    group by p.series_digest
),
side as (
    select * from head
    union all
    select * from latest
)
select
    series_digest,
    build,
    build_rank,
    row_number() over series_order + max(before) over (partition by series_digest) as point,
    lag(build) over series_order as prev_build
from side
window series_order as (partition by series_digest order by build_rank)
"""

# The head builds of ``build_step`` with a touched build (``touched_build``) on either side, or
# whose series steps (``series_build_rows``: each with the build before and its number) differ
# from those the published ``fact_build_step`` (``{held}``) holds. Compared per head as a count
# and a sum of hashes, so that each side is one row per build, not a set of every step held in
# memory. A step from or to a point that is not ``judgeable`` is never stored (decompose_points),
# so it is left out of what is wanted.
REDONE_HEADS = """
with unjudged as (
    select series_digest, build from fact_build_point where not judgeable(p50)
),
wanted as (
    select o.build, count(*) as steps, sum(hash(o.series_digest, o.prev_build, o.point)) as fingerprint
    from series_build_rows as o
    anti join unjudged as h on h.series_digest = o.series_digest and h.build = o.build
    anti join unjudged as b on b.series_digest = o.series_digest and b.build = o.prev_build
    where o.prev_build is not null
    group by o.build
),
held as (
    select head_build as build, count(*) as steps, sum(hash(series_digest, base_build, head_point)) as fingerprint
    from ({held})
    where consecutive
    group by head_build
)
select build from build_step
where build in (select build from touched_build) or prev_build in (select build from touched_build)
union
select build from (select * from wanted except select * from held)
union
select build from (select * from held except select * from wanted)
where build in (select build from build_step)
"""


def appended_builds(con: duckdb.DuckDBPyConnection, touched: pa.Array) -> set[str] | None:
    """The builds of ``touched`` when they all rank after every other build of ``dim_build``
    (``APPENDED_SERIES_BUILDS`` then orders their series, read as ``touched_build``); None when
    one of them is gone or ranks among the others (its neighbours' pairs may change)."""
    ranks = dict(con.execute("select build, build_rank from dim_build").fetchall())
    appended = set(touched.to_pylist())
    if not appended or not appended <= ranks.keys():
        return None
    others = [rank for build, rank in ranks.items() if build not in appended]
    if others and max(others) > min(ranks[build] for build in appended):
        return None
    return appended
