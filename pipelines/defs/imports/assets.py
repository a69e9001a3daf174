"""Imports: records from another source, published through the same transaction, change points,
derived tables and blocking checks as a refresh (the ``imports`` job)."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from liger_warehouse.audit.checks import CheckOutcome
from liger_warehouse.build.publish import ChecksFailed
from liger_warehouse.imports.kernelindex import ImportOutcome, import_file, withdraw_import
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.warehouse.assets import check_results, table_metadata

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
        "snapshot": outcome.snapshot if outcome.snapshot is not None else "",
        "unchanged": outcome.unchanged,
        "records": outcome.records,
        "results_added": outcome.results_added,
        "quarantined": outcome.quarantined,
        "quarantined_lines": dg.MetadataValue.json(outcome.reasons[:100]),
        "reinstated": outcome.reinstated,
        "results_withdrawn": outcome.results_withdrawn,
    }


def _log_checks(context: dg.AssetExecutionContext, outcomes: list[CheckOutcome]) -> None:
    """The blocking checks the import's transaction ran, as evaluations of the lake's checks."""
    for result in check_results(outcomes):
        context.log_event(
            dg.AssetCheckEvaluation(
                asset_key=result.asset_key,
                check_name=result.check_name,
                passed=result.passed,
                metadata=result.metadata,
                blocking=True,
            )
        )


@dg.asset(group_name=GROUP, kinds={"json", "ducklake"}, output_required=False)
def kernelindex_import(context: dg.AssetExecutionContext, config: ImportConfig, warehouse: WarehouseResource):
    """Records of kernelindex.dev/v1alpha1 (NDJSON) published as source ``import:<name>``, or that
    source withdrawn (its results stop being current and stay as history)."""
    if config.withdraw == (config.file is not None):
        raise dg.Failure("give either file (an import) or withdraw: true (a withdrawal)", allow_retries=False)
    try:
        if config.withdraw:
            outcome = withdraw_import(warehouse.lake(), warehouse.raw(), config.name)
        else:
            outcome = import_file(warehouse.lake(), warehouse.raw(), Path(config.file).read_bytes(), config.name)
    except ChecksFailed as exc:
        _log_checks(context, exc.outcomes)
        raise dg.Failure(str(exc), allow_retries=False) from None
    if outcome.published is None or outcome.published.snapshot is None:
        context.log.info(f"{outcome.source_key}: {outcome.unchanged}; nothing published")
        context.log_event(dg.AssetObservation(asset_key=context.asset_key, metadata=_metadata(outcome)))
        return
    for table, metadata in table_metadata(warehouse, outcome.published).items():
        context.log_event(dg.AssetMaterialization(asset_key=table, metadata=metadata))
    _log_checks(context, outcome.published.outcomes)
    yield dg.MaterializeResult(metadata=_metadata(outcome))
