-- revision_labels: one row per upstream revision, in the columns of `dim_upstream_revision`,
-- with the `label` people know it by: the run name of a gh-pages run, the commit sha of a
-- main-branch CSV revision.
-- reads: dim_upstream_revision
create or replace view revision_labels as
select
    *,
    coalesce(run, commit) as label
from dim_upstream_revision;
