"""Derived analysis tables, computed from the staged generation before it is published."""

import dagster as dg

from pipelines import change_points
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.warehouse.assets import column_schema
from pipelines.tables import DESCRIPTIONS


@dg.asset(
    group_name="analysis",
    kinds={"parquet", "python"},
    description=DESCRIPTIONS[change_points.TABLE],
    # After the blocking audits of the facts it reads; published_generation waits for it.
    deps=["fact_result", "dim_upstream_revision"],
    output_required=False,
)
def fact_change_point(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Change points of every series' gh-pages run history (Apache Otava e-divisive), added to
    the staged generation so they are published atomically with the facts they come from."""
    gens = warehouse.generations()
    gen_id = warehouse.ledger().staged(context.run.run_id)
    if gen_id is None:
        context.log.info("this run staged no generation: no change points to compute")
        return
    gen = gens.load(gen_id)
    part = change_points.add_to_generation(gens, gen)
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": part.rows,
            "dagster/column_schema": column_schema(change_points.TABLE),
            "generation": gen.id,
            "part": part.file,
            "method": change_points.method(),
        }
    )
