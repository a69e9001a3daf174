"""Upstream: list every revision upstream publishes and store the new ones as raw snapshots."""

from dataclasses import dataclass
from datetime import timedelta

import dagster as dg

from liger_warehouse.lake.connect import held_revisions
from liger_warehouse.model.revisions import UpstreamListing
from liger_warehouse.upstream.compare import COMPARES_PER_REFRESH, fetch_compares, run_pairs
from liger_warehouse.upstream.fetch import fetch_revisions
from pipelines.defs.resources import UpstreamResource, WarehouseResource

# This asset materializes on every refresh, even when upstream holds nothing new (the tables
# and the publish are skipped then), so its age is the time since the warehouse last refreshed.
REFRESH_FRESHNESS = dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=72), warn_window=timedelta(hours=36))

LISTING_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("source", "string", description="main or gh-pages"),
        dg.TableColumn("path", "string", description="the CSV path in the upstream repository"),
        dg.TableColumn("run", "string", description="the gh-pages run, null on main"),
        dg.TableColumn("commit", "string", description="the commit (main) or run name (gh-pages)"),
        dg.TableColumn("committed_at", "string"),
        dg.TableColumn("html_url", "string", description="the commit on GitHub"),
        dg.TableColumn("raw_snapshot", "string", description="content-addressed gzipped CSV"),
    ]
)


@dataclass
class FetchedUpstream:
    """What the next step needs: the listing, and the raw snapshot of each new revision."""

    listing: UpstreamListing
    contents: dict[str, str]
    failures: list[str]


@dg.asset(group_name="upstream", kinds={"github", "csv"}, freshness_policy=REFRESH_FRESHNESS)
def upstream_snapshots(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, upstream: UpstreamResource
) -> dg.Output[FetchedUpstream]:
    """Every revision of the upstream Liger CSVs: the main-branch history of each
    ``benchmark/data/*.csv`` and every gh-pages benchmark run.

    Only revisions the warehouse has not stored are downloaded; listings use conditional
    requests. Each file is kept as an immutable, content-addressed, gzipped raw snapshot, and
    each run's compare with the run before it (the commits in between) is kept beside them.
    Materializes on every refresh: its freshness policy warns after 36 hours without one.
    """
    storage = warehouse.storage()
    source = upstream.open(storage)
    listing = source.list()
    known = held_revisions(warehouse.lake())
    fetched = fetch_revisions(
        source, warehouse.raw(), listing, known, lambda ref: context.log.info(f"stored {ref.label}")
    )
    compares = fetch_compares(source, warehouse.raw(), run_pairs(listing), COMPARES_PER_REFRESH)
    http = getattr(source, "http", None)
    for problem in listing.problems + fetched.failures + compares.failures:
        context.log.warning(problem)
    return dg.Output(
        FetchedUpstream(listing, fetched.contents, fetched.failures),
        metadata={
            "dagster/row_count": len(listing.revisions),
            "dagster/column_schema": LISTING_SCHEMA,
            "upstream": source.describe(),
            "revisions_listed": len(listing.revisions),
            "revisions_downloaded": len(fetched.downloaded),
            "revisions_reused_from_raw_store": fetched.reused,
            "download_failures": len(fetched.failures),
            "compares_stored": len(compares.stored),
            "compares_missing_upstream": len(compares.missing),
            "compare_failures": len(compares.failures),
            "http_requests": http.requests if http else 0,
            "content_bytes_downloaded": http.bytes_downloaded if http else 0,
        },
    )
