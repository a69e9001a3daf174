"""The benchmark report: an index, one page per kernel and the script they share, per lake
snapshot, with PNG renders."""

import base64
import tempfile
from pathlib import Path

import dagster as dg

from liger_warehouse.lake.connect import read_lake
from liger_warehouse.report.publish import publish_report
from pipelines.defs.resources import WarehouseResource


def _inline_png(name: str, path: Path) -> dg.MetadataValue:
    """The Dagster UI renders Markdown images with data URIs, so the chart shows in place."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return dg.MetadataValue.md(f"![{name}](data:image/png;base64,{data})")


@dg.asset(group_name="report", kinds={"duckdb", "report"}, deps=["fact_change_point"])
def liger_report(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """``<warehouse>/reports/<snapshot>/index.html``: the open regressions (neither acknowledged
    nor muted nor retracted); per kernel, p50 across versions for each GPU and provider; Liger's
    speedup over each baseline across versions; the regressions and change points. Beside it,
    ``kernels/<kernel>.html``: each kernel's p50 per gh-pages run with its change points,
    environment shifts, acknowledgements and annotations marked, and its regressions. Every page
    carries its charts' data and loads Vega, Vega-Lite and vega-embed from ``vega-bundle.js``
    beside the index, by a relative path: the set opens offline. The overview charts are attached
    as PNGs."""
    from liger_warehouse.report.build import build_report  # Altair and vl-convert: only to draw

    storage = warehouse.storage()
    with read_lake(warehouse.lake()) as con, tempfile.TemporaryDirectory(prefix="liger-report-") as tmp:
        report = build_report(con, Path(tmp))
        keys = publish_report(storage, report)
        charts = {f"chart/{name}": _inline_png(name, path) for name, path in report.pngs.items()}
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(storage.uri(keys["index"])),
            "snapshot": report.snapshot,
            "charts": report.charts,
            "kernel_pages": len(report.kernel_pages),
            "open_regressions": report.open_regressions,
            "missing_views": ", ".join(report.missing_views) or "none",
            **charts,
            **{f"png/{name}": dg.MetadataValue.path(storage.uri(keys[name])) for name in report.pngs},
        }
    )
