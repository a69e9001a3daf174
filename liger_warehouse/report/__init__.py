"""The benchmark report: one self-contained HTML page of Vega-Lite charts, plus PNG renders.

Pure logic (no Dagster): ``build.build_report(con, out)`` reads the public views of a read-only
reader of the lake and writes ``out/index.html`` and ``out/*.png``; ``publish`` copies them
into the warehouse. Nothing is imported here, so publishing does not load the Altair stack.
"""
