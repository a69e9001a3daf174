"""Exports of the lake's newest snapshot to other formats."""

import dagster as dg

from liger_warehouse.export.writer import KEEP_EXPORTS, existing_export, export_snapshot, prune_exports, snapshot_key
from liger_warehouse.lake.connect import latest_snapshot
from pipelines.defs.resources import WarehouseResource


@dg.asset(group_name="exports", kinds={"duckdb", "json"}, deps=["fact_change_point"])
def kernelindex_export(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Every result of the lake's newest snapshot as a ``kernelindex.dev/v1alpha1`` record, one JSON
    object per line, at ``<warehouse>/exports/kernelindex/<snapshot>.ndjson``.

    Every record is validated against ``liger_warehouse/export/kernelindex.schema.json`` (compiled
    validator; the first invalid record fails the asset and nothing is replaced). A snapshot
    already exported is not exported again, and only the newest exports are kept: each one can
    be rebuilt from its snapshot. Rules: docs/EXPORTS.md.
    """
    storage, lake = warehouse.storage(), warehouse.lake()
    snapshot = latest_snapshot(lake)
    path = storage.uri(snapshot_key(snapshot))
    done = existing_export(storage, snapshot)
    if done is not None:
        context.log.info(f"snapshot {snapshot} is already exported to {path}")
        return dg.MaterializeResult(metadata=_metadata(snapshot, path, done, reused=True))
    _, stats = export_snapshot(lake, storage, snapshot)
    pruned = prune_exports(storage, KEEP_EXPORTS)
    context.log.info(f"{stats.records} records in {stats.seconds:.1f}s ({stats.records_per_second:,.0f}/s)")
    sidecar = {"records": stats.records, "validated": stats.validated, "bytes": stats.bytes}
    sidecar |= {"sha256": stats.sha256, "by_metric": stats.by_metric}
    timing = {"seconds": round(stats.seconds, 2), "records_per_second": round(stats.records_per_second)}
    return dg.MaterializeResult(
        metadata={**_metadata(snapshot, path, sidecar, reused=False), **timing, "exports_pruned": len(pruned)}
    )


def _metadata(snapshot: int, path: str, sidecar: dict, reused: bool) -> dict:
    return {
        "dagster/row_count": sidecar["records"],
        "path": dg.MetadataValue.path(path),
        "snapshot": snapshot,
        "schema_validation": f"{sidecar['validated']} of {sidecar['records']} records valid "
        "against kernelindex.schema.json",
        "records_by_metric": dg.MetadataValue.json(sidecar["by_metric"]),
        "bytes": sidecar["bytes"],
        "sha256": sidecar["sha256"],
        "reused_existing_export": reused,
    }
