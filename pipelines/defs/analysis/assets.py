"""Derived analysis tables, computed from the staged generation before it is published."""

import dagster as dg

from liger_warehouse.analysis import derived
from liger_warehouse.model.table_docs import DESCRIPTIONS
from liger_warehouse.model.tables import CHANGE_POINT_TABLES, SQL_MODELS
from pipelines.defs.resources import ChangePointResource, WarehouseResource
from pipelines.defs.warehouse.assets import column_schema
from pipelines.defs.warehouse.handoff import CHANGE_POINT_STEP, INGEST_STEP, STAGED, staged_input

# After the blocking audits of the facts they read; published_generation waits for them.
_DEPS = ["fact_result", "dim_upstream_revision"]


def _specs() -> list[dg.AssetSpec]:
    # Built in a function: the defs loader would register module-level specs a second time.
    return [
        dg.AssetSpec(
            name,
            group_name="analysis",
            kinds={"parquet", "python"},
            description=DESCRIPTIONS[name],
            deps=_DEPS,
            skippable=True,
        )
        for name in CHANGE_POINT_TABLES
    ]


@dg.multi_asset(specs=_specs(), can_subset=False)
def fact_change_point(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, change_points: ChangePointResource
):
    """Change points of every series' gh-pages run history (Apache Otava e-divisive), added to
    the staged generation so they are published atomically with the facts they come from.
    Each series resumes from the published change_point_state when its history only grew.

    The staged generation is the one the latest ``fact_result`` names (this run's in a refresh):
    materialized alone, it adds to what was last staged, and fails when that was published."""
    # The analysis loads with the step that uses it, not with the definitions (and Otava and
    # SciPy only where series are analysed: liger_warehouse/analysis/series_pool.py).
    from liger_warehouse.analysis import change_points as detection

    gens = warehouse.generations()
    gen = staged_input(context, gens, [INGEST_STEP])
    try:
        parts, counts = detection.add_to_generation(gens, gen, change_points.pool(context.log))
    finally:
        change_points.release()
    context.log.info(
        f"change points of {counts.series} series: {counts.resumed} resumed, "
        f"{counts.unchanged} unchanged, {counts.from_scratch} from scratch"
    )
    for name, part in parts.items():
        yield dg.MaterializeResult(
            asset_key=name,
            metadata={
                "dagster/row_count": part.rows,
                "dagster/column_schema": column_schema(name),
                STAGED: gen.id,
                "part": part.file,
                "method": detection.method(),
                **counts.as_metadata(),
            },
        )


def _model_specs() -> list[dg.AssetSpec]:
    # After the change points too: both re-stage the one staged manifest, so they must not run
    # side by side.
    deps = [*_DEPS, *CHANGE_POINT_TABLES]
    return [
        dg.AssetSpec(
            name,
            group_name="analysis",
            kinds={"parquet", "duckdb"},
            description=DESCRIPTIONS[name],
            deps=deps,
            skippable=True,
        )
        for name in SQL_MODELS
    ]


@dg.multi_asset(specs=_model_specs(), can_subset=False)
def sql_models(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """The derived tables of ``sql/derived/``: each series and its sweep, the builds, the points
    that stand for a series in each run and build, the steps between them, the speedup pairs and
    each series' noise. Computed by DuckDB from the staged facts (only what the new facts touch;
    the rest is carried from the published generation) and added to the staged generation, so
    they publish with them. That
    generation is the one ``fact_result`` and ``fact_change_point`` last named, so this runs
    alone too, after them."""
    gens = warehouse.generations()
    gen = staged_input(context, gens, [INGEST_STEP, CHANGE_POINT_STEP])
    seconds: dict[str, float] = {}
    for name, parts in derived.add_to_generation(gens, gen, seconds=seconds).items():
        yield dg.MaterializeResult(
            asset_key=name,
            metadata={
                "dagster/row_count": sum(p.rows for p in parts),
                "dagster/column_schema": column_schema(name),
                STAGED: gen.id,
                "parts": len(parts),
                "model": f"sql/derived/{name}.sql",
                "seconds": dg.FloatMetadataValue(round(seconds[name], 3)),
            },
        )
