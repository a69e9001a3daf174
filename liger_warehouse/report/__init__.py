"""The benchmark report: HTML pages of Vega-Lite charts that open offline, plus PNG renders.

Pure logic (no Dagster): ``build.build_report(con, out)`` reads the public views of a read-only
reader of the lake and writes ``out/index.html`` (the overview, with the open regressions),
``out/kernels/<kernel>.html`` (each kernel's history per gh-pages run, with its change points,
environment shifts and triage marked, and its regressions), ``out/vega-bundle.js`` (Vega,
Vega-Lite and vega-embed, which every page loads by a relative path) and ``out/*.png``;
``publish`` copies them into the warehouse. Nothing is imported here, so publishing does not load
the Altair stack.
"""
