"""Exports of the published generation to other formats."""

import dagster as dg

from liger_warehouse.export.writer import (
    KEEP_EXPORTS,
    existing_export,
    export_generation,
    generation_key,
    prune_exports,
)
from pipelines.defs.resources import WarehouseResource


@dg.asset(group_name="exports", kinds={"duckdb", "json"}, deps=["published_generation"])
def kernelindex_export(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    """Every result of the published generation as a ``kernelindex.dev/v1alpha1`` record, one JSON
    object per line, at ``<warehouse>/exports/kernelindex/<generation>.ndjson``.

    Every record is validated against ``liger_warehouse/export/kernelindex.schema.json`` (compiled
    validator; the first invalid record fails the asset and nothing is replaced). A generation
    already exported is not exported again, and only the newest exports are kept: each one can
    be rebuilt from its generation. Rules: docs/EXPORTS.md.
    """
    gens = warehouse.generations()
    gen = gens.current()
    path = gens.storage.uri(generation_key(gen.id))
    done = existing_export(gens.storage, gen.id)
    if done is not None:
        context.log.info(f"generation {gen.id} is already exported to {path}")
        return dg.MaterializeResult(metadata=_metadata(gen.id, path, done, reused=True))
    _, stats = export_generation(gens, gen)
    pruned = prune_exports(gens.storage, KEEP_EXPORTS)
    context.log.info(f"{stats.records} records in {stats.seconds:.1f}s ({stats.records_per_second:,.0f}/s)")
    sidecar = {"records": stats.records, "validated": stats.validated, "bytes": stats.bytes}
    sidecar |= {"sha256": stats.sha256, "by_metric": stats.by_metric}
    timing = {"seconds": round(stats.seconds, 2), "records_per_second": round(stats.records_per_second)}
    return dg.MaterializeResult(
        metadata={**_metadata(gen.id, path, sidecar, reused=False), **timing, "exports_pruned": len(pruned)}
    )


def _metadata(gen_id: str, path: str, sidecar: dict, reused: bool) -> dict:
    return {
        "dagster/row_count": sidecar["records"],
        "path": dg.MetadataValue.path(path),
        "generation": gen_id,
        "schema_validation": f"{sidecar['validated']} of {sidecar['records']} records valid "
        "against kernelindex.schema.json",
        "records_by_metric": dg.MetadataValue.json(sidecar["by_metric"]),
        "bytes": sidecar["bytes"],
        "sha256": sidecar["sha256"],
        "reused_existing_export": reused,
    }
