"""Imports: records from another source, staged as the next generation and then published
through the same blocking audits, publish and views as a refresh (the ``imports`` job)."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from liger_warehouse.imports.kernelindex import ImportOutcome, stage_import, stage_withdrawal
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.warehouse.assets import table_metadata

GROUP = "imports"


class ImportConfig(dg.Config):
    """One import run: add a file of records as source ``import:<name>``, or withdraw it."""

    name: str = Field(description="The source name: its results get source_key import:<name>.")
    file: str | None = Field(default=None, description="The NDJSON file of kernelindex.dev/v1alpha1 records to import.")
    withdraw: bool = Field(
        default=False,
        description="Withdraw import:<name> instead: its results stop being current, nothing is deleted.",
    )


def _metadata(outcome: ImportOutcome) -> dict:
    return {
        "source_key": outcome.source_key,
        "generation": outcome.generation or "",
        "unchanged": outcome.unchanged,
        "records": outcome.records,
        "results_added": outcome.results_added,
        "quarantined": outcome.quarantined,
        "quarantined_lines": dg.MetadataValue.json(outcome.reasons[:100]),
        "reinstated": outcome.reinstated,
        "results_withdrawn": outcome.results_withdrawn,
    }


@dg.asset(group_name=GROUP, kinds={"json", "parquet"}, output_required=False)
def kernelindex_import(context: dg.AssetExecutionContext, config: ImportConfig, warehouse: WarehouseResource):
    """Records of kernelindex.dev/v1alpha1 (NDJSON) from another source, ingested as source
    ``import:<name>`` and staged as the next generation (docs/EXPORTS.md), or that source
    withdrawn: its results stop being current, and stay as history.

    The blocking audits of the staged generation, the publish and the views follow as in a
    refresh. When nothing changes (the same file again, a source already withdrawn), nothing
    is staged, the run records an observation and the later steps are skipped."""
    if config.withdraw == (config.file is not None):
        raise dg.Failure("give either file (an import) or withdraw: true (a withdrawal)", allow_retries=False)
    gens = warehouse.generations()
    if config.withdraw:
        outcome = stage_withdrawal(gens, config.name)
    else:
        outcome = stage_import(gens, Path(config.file).read_bytes(), config.name)
    if outcome.generation is None:
        context.log.info(f"{outcome.source_key}: {outcome.unchanged}; nothing staged")
        context.log_event(dg.AssetObservation(asset_key=context.asset_key, metadata=_metadata(outcome)))
        return
    # The tables' new versions come from this run, as a refresh's come from warehouse_tables; they
    # name the staged generation for the audit and the later steps.
    gen = gens.load(outcome.generation)
    prior = gens.parent(gen)
    for table, metadata in table_metadata(gen, prior).items():
        context.log_event(dg.AssetMaterialization(asset_key=table, metadata=metadata))
    yield dg.MaterializeResult(metadata=_metadata(outcome))
