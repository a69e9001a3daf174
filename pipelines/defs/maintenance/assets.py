"""DuckLake's own maintenance of the lake: small files merged, old snapshots expired, and the
files nothing references any more (old snapshots', a killed refresh's) deleted."""

import dagster as dg

from liger_warehouse.lake.maintenance import KEEP_SNAPSHOTS_FOR, maintain
from pipelines.defs.resources import WarehouseResource


@dg.asset(group_name="maintenance", kinds={"ducklake"})
def lake_maintenance(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The lake compacted and cleaned by DuckLake: adjacent files merged, snapshots older than
    the retention expired, unreferenced and orphaned files deleted."""
    done = maintain(warehouse.lake())
    return dg.MaterializeResult(
        metadata={
            "snapshots_expired": done.expired,
            "files_merged": done.merged,
            "files_deleted": done.deleted,
            "retention": KEEP_SNAPSHOTS_FOR,
        }
    )


maintenance_job = dg.define_asset_job(
    "maintenance",
    selection=dg.AssetSelection.assets(lake_maintenance),
    description="Compact the lake and delete what no kept snapshot needs (DuckLake's own maintenance).",
    tags={"liger-warehouse/refresh": "maintenance"},
    executor_def=dg.in_process_executor,
)

weekly_maintenance = dg.ScheduleDefinition(
    name="weekly_maintenance",
    job=maintenance_job,
    cron_schedule="0 4 * * 0",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
