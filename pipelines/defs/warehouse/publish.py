"""Publishing: switch readers to the generation this run staged and audited."""

import dagster as dg

from liger_warehouse.model.tables import SCHEMAS
from pipelines.defs.resources import UpstreamResource, WarehouseResource
from pipelines.defs.warehouse.assets import migration_metadata, revisions_metadata

# A generation is its manifest: one row per Parquet part of each table.
MANIFEST_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("table", "string", description="the warehouse table"),
        dg.TableColumn("key", "string", description="what the part holds: a source, a revision digest or all"),
        dg.TableColumn("file", "string", description="the immutable Parquet file, relative to the warehouse root"),
        dg.TableColumn("rows", "int64"),
    ]
)


# The staged generation comes from the tables (a refresh) or from kernelindex_import (an import).
@dg.asset(group_name="warehouse", kinds={"parquet"}, deps=[*SCHEMAS, "kernelindex_import"])
def published_generation(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, upstream: UpstreamResource
) -> dg.MaterializeResult:
    """The generation readers see. Switched atomically (one pointer write) after the blocking
    audits pass, and only if nobody published since this run's generation was built.

    Its metadata is the refresh at a glance: the results added, restated and removed, and the
    upstream revisions ingested, each linked to its commit, and the rows of every table; after a
    schema migration, the version migrated from and how many digests changed. Its row
    count and columns are those of its manifest: one row per Parquet part."""
    gens = warehouse.generations()
    gen_id = warehouse.ledger().staged(context.run.run_id)
    if gen_id is None:
        raise dg.Failure("this run staged no generation to publish")
    gen = gens.load(gen_id)
    gens.publish(gen)
    summary = gen.summary
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(len(parts) for parts in gen.tables.values()),
            "dagster/column_schema": MANIFEST_SCHEMA,
            "generation": gen.id,
            "parent": gen.parent or "",
            "schema_version": gen.schema_version,
            **migration_metadata(summary),
            "revisions_ingested": summary.get("revisions_ingested", 0),
            "revisions": revisions_metadata(summary, upstream),
            "results_added": summary.get("results_added", 0),
            "results_restated": summary.get("results_restated", 0),
            "results_removed": summary.get("results_removed", 0),
            "rejected_revisions": dg.MetadataValue.md(
                "\n".join(f"- {r}" for r in summary.get("rejected", [])) or "none"
            ),
            "no_longer_upstream": len(summary.get("no_longer_upstream", [])),
            **{f"rows/{t}": n for t, n in summary.get("row_counts", {}).items()},
        }
    )
