"""Publishing: switch readers to the generation last staged and audited."""

import dagster as dg

from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.serve.readers_copy import with_readers_copies
from pipelines.defs.resources import UpstreamResource, WarehouseResource
from pipelines.defs.warehouse.assets import migration_metadata, revisions_metadata
from pipelines.defs.warehouse.checks import SPECS
from pipelines.defs.warehouse.handoff import CHANGE_POINT_STEP, INGEST_STEP, SQL_MODELS_STEP, STAGED, staged_input

# A generation is its manifest: one row per Parquet part of each table.
MANIFEST_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("table", "string", description="the warehouse table"),
        dg.TableColumn("key", "string", description="what the part holds: a source, a revision digest or all"),
        dg.TableColumn("file", "string", description="the immutable Parquet file, relative to the warehouse root"),
        dg.TableColumn("rows", "int64"),
    ]
)


def _refuse_unless_audited(context: dg.AssetExecutionContext, gen_id: str) -> None:
    """A Failure unless every blocking audit last ran on ``gen_id`` and passed."""
    problems = []
    for spec in SPECS:
        record = context.instance.get_latest_asset_check_evaluation_record(spec.key)
        evaluation = record.evaluation if record else None
        audited = evaluation.metadata.get(STAGED) if evaluation and evaluation.metadata else None
        if evaluation is None or audited is None or audited.value != gen_id:
            problems.append(f"{spec.key.to_user_string()} has not audited it")
        elif not evaluation.passed:
            problems.append(f"{spec.key.to_user_string()} failed")
    if problems:
        raise dg.Failure(
            f"generation {gen_id} is not audited: {'; '.join(problems)}; run the refresh (or the checks) again",
            allow_retries=False,
        )


# The staged generation comes from the tables (a refresh) or from kernelindex_import (an import).
@dg.asset(group_name="warehouse", kinds={"parquet"}, deps=[*SCHEMAS, "kernelindex_import"])
def published_generation(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, upstream: UpstreamResource
) -> dg.MaterializeResult:
    """The generation readers see. Switched atomically (one pointer write) after the blocking
    audits pass, and only if nobody published since the staged generation was built.

    The staged generation is the one the tables, the change points and the derived tables last
    named (this run's in a refresh or import), so this also runs alone, in a later run. It refuses
    a generation that was never staged, is already published or superseded, or whose latest
    audit did not pass (a blocking check gates only the run it fails in).

    Before the switch, it writes the readers' copies the published tables need
    (``serve/readers_copy.py``) into the manifest.

    Its metadata is the refresh at a glance: the results added, restated and removed, and the
    upstream revisions ingested, each linked to its commit, the readers' copies written, and
    the rows of every table; after a schema migration, the version migrated from and how many
    digests changed. Its row count and columns are those of its manifest: one row per Parquet
    part."""
    gens = warehouse.generations()
    # One asset of each step before this one: each step writes all its assets or none.
    gen = staged_input(context, gens, [INGEST_STEP, CHANGE_POINT_STEP, SQL_MODELS_STEP])
    _refuse_unless_audited(context, gen.id)
    # The readers' copies of the audited parts, named in the manifest before it is published.
    copies = with_readers_copies(gens, gen, gens.parent(gen))
    gens.restage(gen)
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
            "readers_copies_written": dg.MetadataValue.md(
                "\n".join(f"- {table}: {seconds:.1f} s" for table, seconds in copies.items()) or "none"
            ),
            **{f"rows/{t}": n for t, n in summary.get("row_counts", {}).items()},
        }
    )
