-- run_history: one row per series and gh-pages run, with the previous run's point and the
-- change. These are the points `change_points` is computed from.
--
-- Run order is upstream's commits.txt order (`run_seq`; `order by series_digest, run_seq`
-- reads a series' history in it). When one run holds several
-- results of a series, the most recently observed one stands for it.
-- reads: labelled_results
create or replace view run_history as
with gh_pages as (
    select *
    from labelled_results
    where source = 'gh-pages'
),
-- Nearly every run holds one result of a series: rank only the (series, run) pairs that hold
-- several, to leave out the results that are not the most recently observed one.
crowded as (
    select series_digest, revision_seq
    from gh_pages
    group by series_digest, revision_seq
    having count(*) > 1
),
outranked as (
    select p.result_digest
    from gh_pages as p
    semi join crowded as c
        on c.series_digest = p.series_digest and c.revision_seq is not distinct from p.revision_seq
    qualify row_number() over (
        partition by p.series_digest, p.revision_seq
        order by p.observed_at desc, p.result_digest
    ) > 1
),
ordered as (
    select
        *,
        row_number() over series_order - 1 as point_index,
        count(*) over (partition by series_digest) as points,
        lag(revision) over series_order as prev_revision,
        lag(p50) over series_order as prev_p50
    from gh_pages
    anti join outranked using (result_digest)
    window series_order as (partition by series_digest order by revision_seq)
)
select
    series_digest,
    kernel,
    mode,
    provider,
    backend,
    metric,
    unit,
    gpu,
    architecture,
    workload,
    x_name,
    x_value,
    point_index,
    points,
    revision as run,
    revision_seq as run_seq,
    liger_version,
    p20,
    p50,
    p80,
    observed_at,
    prev_revision as prev_run,
    prev_p50,
    p50 / nullif(prev_p50, 0) - 1 as change,
    result_digest
from ordered;
