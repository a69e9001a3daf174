"""The refresh job and its nightly schedule."""

import os

import dagster as dg

REFRESH_TAGS = {"liger-warehouse/refresh": "nightly"}

refresh_job = dg.define_asset_job(
    "refresh",
    selection=dg.AssetSelection.all(),
    description="Pull every new upstream revision, publish the next generation and rebuild the views.",
    tags=REFRESH_TAGS,
    executor_def=dg.in_process_executor,
)

nightly_refresh = dg.ScheduleDefinition(
    name="nightly_refresh",
    job=refresh_job,
    cron_schedule=os.getenv("LIGER_WAREHOUSE_SCHEDULE", "0 2 * * *"),
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
