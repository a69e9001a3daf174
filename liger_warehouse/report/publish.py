"""Put a built report into the warehouse, under ``reports/<snapshot>/``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from liger_warehouse.report.paths import KERNELS, SCRIPT, kernel_path
from liger_warehouse.store.storage import Storage

if TYPE_CHECKING:  # the Altair stack is for drawing; publishing only copies files
    from liger_warehouse.report.build import Report

PREFIX = "reports"


def report_key(snapshot: int, name: str) -> str:
    """Where the report of lake snapshot ``snapshot`` keeps file ``name``."""
    return f"{PREFIX}/{snapshot}/{name}"


def kernel_page_key(snapshot: int, kernel: str) -> str:
    """Where the report of lake snapshot ``snapshot`` keeps ``kernel``'s page."""
    return report_key(snapshot, kernel_path(kernel))


def publish_report(storage: Storage, report: Report) -> dict[str, str]:
    """Upload the script the pages load, the PNGs and the kernel pages, then ``index.html`` (each
    object whole), so a page that exists has its script and an index that exists has all its
    images and pages. Returns the key of each file by name: ``index``, ``script``, the chart ids
    of the PNGs, and ``kernels/<kernel>`` for each kernel page."""
    keys = {"script": report_key(report.snapshot, SCRIPT)}
    storage.write_bytes(keys["script"], report.script.read_bytes())
    for chart_id, path in report.pngs.items():
        keys[chart_id] = report_key(report.snapshot, path.name)
        storage.write_bytes(keys[chart_id], path.read_bytes())
    for kernel, path in report.kernel_pages.items():
        keys[f"{KERNELS}/{kernel}"] = kernel_page_key(report.snapshot, kernel)
        storage.write_bytes(keys[f"{KERNELS}/{kernel}"], path.read_bytes())
    keys = {"index": report_key(report.snapshot, report.html.name), **keys}
    storage.write_bytes(keys["index"], report.html.read_bytes())
    return keys
