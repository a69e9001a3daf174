"""The star schema: normalize new revisions into Parquet parts, audit them, then publish.

Write, audit, publish: ``warehouse_tables`` stages a generation nobody reads yet, blocking
checks audit it, and only then ``published_generation`` switches readers over to it.
"""

import dagster as dg

from liger_warehouse.analysis.part_inputs import derived_current
from liger_warehouse.build.ingest import GenerationBuilder
from liger_warehouse.migration.migrate import migrate
from liger_warehouse.model.table_docs import DESCRIPTIONS, column_description
from liger_warehouse.model.tables import INGESTED, SCHEMAS
from liger_warehouse.runtime.refresh_summary import repository_url, revisions_markdown
from liger_warehouse.serve.database import rebuild_if_stale
from liger_warehouse.store.generations import Generation
from pipelines.defs.resources import UpstreamResource, WarehouseResource
from pipelines.defs.upstream.assets import FetchedUpstream
from pipelines.defs.warehouse.handoff import STAGED

GROUP = "warehouse"


def _table_specs() -> list[dg.AssetSpec]:
    # Built in a function: the defs loader would register module-level specs a second time.
    return [
        dg.AssetSpec(
            name,
            group_name=GROUP,
            kinds={"parquet", "polars"},
            description=DESCRIPTIONS[name],
            deps=["upstream_snapshots"],
            skippable=True,
        )
        for name in INGESTED
    ]


def column_schema(table: str) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(f.name, str(f.type), description=column_description(table, f.name)) for f in SCHEMAS[table]
        ]
    )


def table_metadata(gen: Generation, prior: Generation) -> dict[str, dict]:
    """Per ingested table, the metadata of its version in ``gen``: rows, columns, parts, and the
    generation it is staged in, which the later steps read (``handoff.py``)."""
    metadata = {}
    for table in INGESTED:
        # A set: a long history has thousands of parts, and a list scan per part is quadratic.
        prior_files = {p.file for p in prior.parts(table)}
        new_parts = [p for p in gen.parts(table) if p.file not in prior_files]
        metadata[table] = {
            "dagster/row_count": gen.rows(table),
            "dagster/column_schema": column_schema(table),
            STAGED: gen.id,
            "parts_written": len(new_parts),
            "parts_total": len(gen.parts(table)),
        }
    return metadata


def _table_results(gen: Generation, prior: Generation, extra: dict[str, dict]) -> list[dg.MaterializeResult]:
    """One materialization per table: each is a new version, even when all its parts are reused."""
    return [
        dg.MaterializeResult(asset_key=table, metadata={**metadata, **extra.get(table, {})})
        for table, metadata in table_metadata(gen, prior).items()
    ]


def revisions_metadata(summary: dict, upstream: UpstreamResource) -> dg.MetadataValue:
    """The revisions a refresh ingested, each linked to its commit on GitHub."""
    repo = repository_url(upstream.upstream)
    return dg.MetadataValue.md(revisions_markdown(summary.get("revisions", []), repo))


def migration_metadata(summary: dict) -> dict:
    """What a schema migration in this generation changed (nothing when there was none)."""
    migration = summary.get("migration")
    if not migration:
        return {}
    return {
        "migrated_from_schema_version": migration["from_schema_version"],
        "results_relabelled": migration["results_relabelled"],
        "digests_changed": dg.MetadataValue.json(migration["digests_changed"]),
    }


@dg.multi_asset(specs=_table_specs(), ins={"upstream_snapshots": dg.AssetIn()}, can_subset=False)
def warehouse_tables(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    upstream: UpstreamResource,
    upstream_snapshots: FetchedUpstream,
):
    """Normalize every new upstream revision into the digest-linked star schema and stage it as
    the next generation. Unchanged Parquet parts are referenced, not rewritten; when upstream
    holds nothing new, nothing is written and no table materializes. Each table's materialization
    names the staged generation (``staged_generation``) for the audit and the later steps. A
    warehouse whose digests follow an older schema version is migrated first, from its raw
    snapshots (docs/SCHEMA.md); one whose derived tables came from other SQL (an upgrade) gets a
    generation staged even when upstream holds nothing new, so the later steps derive them again."""
    gens = warehouse.generations()
    with gens.try_lock("build"):
        base = migrate(gens, warehouse.raw())
        builder = GenerationBuilder(gens, warehouse.raw(), base=base)
        rederive = bool(builder.prior.id) and not derived_current(builder.prior)
        if rederive:
            context.log.info(f"generation {builder.prior.id} was derived by other SQL: staging one to derive it again")
        gen = builder.build(upstream_snapshots.listing, upstream_snapshots.contents, rederive=rederive)
    summary = builder.summary
    if builder.migration:
        context.log.info(f"migrated to schema version {builder.migration['schema_version']}: {builder.migration}")
    for message in summary.rejected + summary.warnings:
        context.log.warning(message)
    if gen is None:
        context.log.info("upstream holds nothing new: no generation staged")
        if rebuild_if_stale(gens, warehouse.database_path()) is not None:
            context.log.warning("liger.duckdb showed another generation than CURRENT or other SQL: views rebuilt")
        return
    extra = {
        "fact_result": {
            "results_added": summary.added,
            "results_restated": summary.restated,
            "results_removed": summary.removed,
        },
        "fact_revision_member": {
            "revisions_ingested": len(summary.revisions),
            "revisions": revisions_metadata(gen.summary, upstream),
        },
        "digest_migration": migration_metadata(gen.summary),
    }
    yield from _table_results(gen, builder.prior, extra)
