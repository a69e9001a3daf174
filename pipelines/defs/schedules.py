"""The refresh job and its nightly schedule."""

import os

import dagster as dg

REFRESH_TAGS = {"liger-warehouse/refresh": "nightly"}
EXECUTOR = "LIGER_WAREHOUSE_EXECUTOR"
MAX_CONCURRENT = "LIGER_WAREHOUSE_MAX_CONCURRENT"


def refresh_executor() -> dg.ExecutorDefinition:
    """In-process by default: the steps are short and mostly sequential. Production sets
    ``LIGER_WAREHOUSE_EXECUTOR=multiprocess`` (see deploy/README.md): each step in its own
    process, independent ones (the audit and the derived tables) side by side."""
    if os.getenv(EXECUTOR, "in_process") == "multiprocess":
        return dg.multiprocess_executor.configured(
            {"max_concurrent": int(os.getenv(MAX_CONCURRENT, "4"))}, name="multiprocess"
        )
    return dg.in_process_executor


refresh_job = dg.define_asset_job(
    "refresh",
    selection=dg.AssetSelection.all(),
    description="Pull every new upstream revision, publish the next generation and rebuild the views.",
    tags=REFRESH_TAGS,
    executor_def=refresh_executor(),
)

nightly_refresh = dg.ScheduleDefinition(
    name="nightly_refresh",
    job=refresh_job,
    cron_schedule=os.getenv("LIGER_WAREHOUSE_SCHEDULE", "0 2 * * *"),
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
