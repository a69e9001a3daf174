"""The ``imports`` job: publish an import (or a withdrawal) as the lake's next snapshot."""

import dagster as dg

from pipelines.defs.schedules import LAUNCHED_BY

# Shares the refresh's tag key, so the run queue of deploy/dagster.yaml runs one writer at a
# time; launched from the UI unless the launcher says otherwise (the CLI: "cli").
IMPORT_TAGS = {"liger-warehouse/refresh": "import", LAUNCHED_BY: "manual"}

import_job = dg.define_asset_job(
    "imports",
    selection=dg.AssetSelection.assets("kernelindex_import"),
    description="Import records from another source (or withdraw them) and publish them as the lake's "
    "next snapshot, through the blocking checks. Run config: ops.kernelindex_import.config.",
    tags=IMPORT_TAGS,
    executor_def=dg.in_process_executor,
)
