"""The ``imports`` job: stage an import (or a withdrawal), audit it, derive the analysis tables
from it, publish it, rebuild the views."""

import dagster as dg

from liger_warehouse.model.tables import DERIVED, INGESTED
from pipelines.defs.schedules import LAUNCHED_BY

# Shares the refresh's tag key, so the run queue of deploy/dagster.yaml runs one writer at a
# time; launched from the UI unless the launcher says otherwise (the CLI: "cli").
IMPORT_TAGS = {"liger-warehouse/refresh": "import", LAUNCHED_BY: "manual"}

import_job = dg.define_asset_job(
    "imports",
    # The derived tables too: a generation publishes the change points, builds, points and
    # noise of its own facts, never none.
    selection=dg.AssetSelection.assets("kernelindex_import", *DERIVED, "published_generation", "liger_duckdb")
    | dg.AssetSelection.checks_for_assets(*INGESTED),
    description="Import records from another source (or withdraw them), audit it, derive the analysis "
    "tables, publish the next generation and rebuild the views. Run config: ops.kernelindex_import.config.",
    tags=IMPORT_TAGS,
    executor_def=dg.in_process_executor,
)
