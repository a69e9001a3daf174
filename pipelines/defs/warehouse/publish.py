"""Publishing: switch readers to the generation this run staged and audited."""

import dagster as dg

from pipelines.defs.resources import WarehouseResource
from pipelines.tables import SCHEMAS


@dg.asset(group_name="warehouse", kinds={"parquet"}, deps=list(SCHEMAS))
def published_generation(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    """The generation readers see. Switched atomically (one pointer write) after the blocking
    audits pass, and only if nobody published since this run's generation was built."""
    gens = warehouse.generations()
    gen_id = warehouse.ledger().staged(context.run.run_id)
    if gen_id is None:
        raise dg.Failure("this run staged no generation to publish")
    gen = gens.load(gen_id)
    gens.publish(gen)
    summary = gen.summary
    return dg.MaterializeResult(
        metadata={
            "generation": gen.id,
            "parent": gen.parent or "",
            "revisions_ingested": summary.get("revisions_ingested", 0),
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
