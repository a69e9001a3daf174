"""The benchmark report: one self-contained HTML page of Vega-Lite charts, plus PNG renders.

Pure logic (no Dagster): ``build_report(con, out)`` reads the public views of a read-only
liger.duckdb connection and writes ``out/index.html`` and ``out/*.png``.
"""

from liger_warehouse.report.build import INDEX, Report, build_report

__all__ = ["INDEX", "Report", "build_report"]
