"""Build the report: read the views, draw the charts, write the JavaScript bundle every page loads
(``vega-bundle.js``), one page per kernel (``kernels/<kernel>.html``), ``index.html`` and the PNG
renders."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import duckdb
import vl_convert

from liger_warehouse.report import charts, data, kernel_page, kernels, page
from liger_warehouse.report.data import ReportData
from liger_warehouse.report.history import history_spec
from liger_warehouse.report.paths import INDEX, SCRIPT, kernel_path, script_src
from liger_warehouse.report.png import render

PNG_SCALE = 1.5


@dataclass
class Report:
    """A built report: the index, the kernel pages, the script they load and the PNGs, written
    where ``build_report`` was told."""

    html: Path
    snapshot: int  # the lake snapshot it was drawn from
    charts: int  # on the index
    script: Path  # Vega, Vega-Lite and vega-embed, loaded by every page (``paths.SCRIPT``)
    pngs: dict[str, Path] = field(default_factory=dict)
    missing_views: list[str] = field(default_factory=list)
    kernel_pages: dict[str, Path] = field(default_factory=dict)  # by kernel
    open_regressions: int = 0  # flagged, neither acknowledged nor muted nor retracted


def vl_version() -> str:
    """The Vega-Lite version Altair writes (``v6.4.1`` -> ``6.4``), so JS and PNGs match the specs."""
    return ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])


def build_report(con: duckdb.DuckDBPyConnection, out: Path, png: bool = True) -> Report:
    """Write ``out/vega-bundle.js``, ``out/kernels/<kernel>.html``, ``out/index.html`` (and, with
    ``png``, one PNG per overview chart) from a reader of the lake."""
    out.mkdir(parents=True, exist_ok=True)
    rows = data.load(con)
    specs, body, overview = _content(rows)
    script = out / SCRIPT
    script.write_text(page.javascript(vl_version()), encoding="utf-8")
    pages = _kernel_pages(con, rows, specs, out)
    title = f"Liger-Kernel benchmark report, snapshot {rows.snapshot}"
    target = out / INDEX
    target.write_text(page.page(title, body, specs, script_src(INDEX)), encoding="utf-8")
    opened = rows.open.total if rows.open else 0
    report = Report(
        target,
        rows.snapshot,
        len(specs),
        script,
        missing_views=rows.missing,
        kernel_pages=pages,
        open_regressions=opened,
    )
    if png:
        for chart_id in overview:
            path = out / f"{chart_id}.png"
            path.write_bytes(render(specs[chart_id], vl_version(), PNG_SCALE))
            report.pngs[chart_id] = path
    return report


def _kernel_pages(
    con: duckdb.DuckDBPyConnection, rows: ReportData, specs: dict[str, dict], out: Path
) -> dict[str, Path]:
    """Write the page of every kernel; its chart across releases is the index's (``specs``)."""
    return {
        kernel: _kernel_page(history, rows, specs.get(_p50_id(kernel)), out)
        for kernel, history in kernels.load(con, rows.kernels).items()
    }


def _kernel_page(history: kernels.KernelHistory, rows: ReportData, releases: dict | None, out: Path) -> Path:
    """Write one kernel's page: its chart per gh-pages run, its regressions, its chart across releases."""
    specs = {kernel_page.HISTORY: history_spec(history)} if history.points else {}
    if releases is not None:
        specs[kernel_page.RELEASES] = releases
    meta = f"Lake snapshot <code>{rows.snapshot}</code>, published {html.escape(rows.created_at)}:"
    counts = rows.open_counts.get(history.kernel, (0, 0))
    body = kernel_page.body(history, meta, counts, releases is not None, _footer(rows))
    name = kernel_path(history.kernel)
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    title = f"{history.kernel}: Liger-Kernel benchmark report, snapshot {rows.snapshot}"
    path.write_text(page.page(title, body, specs, script_src(name)), encoding="utf-8")
    return path


def _p50_id(kernel: str) -> str:
    return f"p50-{page.slug(kernel)}"


def _content(rows: ReportData) -> tuple[dict[str, dict], str, list[str]]:
    """Chart specs by id, the page body, and the ids worth a PNG (overviews plus one kernel)."""
    specs: dict[str, dict] = {}
    parts = [_header(rows), _open_section(rows)]
    if rows.speedup:
        specs["speedup"] = charts.to_spec(charts.speedup_chart(rows.speedup), rows.speedup)
    parts.append(_section("speedup", "Liger's speedup over each baseline", SPEEDUP_TEXT, "speedup" in specs))
    p50_ids = _p50_specs(rows, specs)
    parts.append(_p50_section(rows, p50_ids))
    if rows.regression_counts:
        specs["regressions"] = charts.to_spec(
            charts.regression_counts_chart(rows.regression_counts), rows.regression_counts
        )
    parts.append(_section("regressions", "Regressions", REGRESSIONS_TEXT, "regressions" in specs, rows.regressions))
    if rows.change_point_counts:
        specs["change-points"] = charts.to_spec(
            charts.change_point_counts_chart(rows.change_point_counts), rows.change_point_counts
        )
    parts.append(
        _section("change-points", "Change points", CHANGE_POINTS_TEXT, "change-points" in specs, rows.change_points)
    )
    if any(r["too_noisy"] for r in rows.noise_counts):
        specs["noise"] = charts.to_spec(charts.noise_chart(rows.noise_counts), rows.noise_counts)
    parts.append(_section("noise", "Benchmarks too noisy to guard", NOISE_TEXT, "noise" in specs, rows.noise))
    parts.append(_footer(rows))
    overview = [c for c in ("speedup", "regressions", "change-points", "noise") if c in specs]
    if p50_ids:
        overview.insert(1, _busiest_kernel(rows, p50_ids))
    return specs, "\n".join(parts), overview


def _p50_specs(rows: ReportData, specs: dict[str, dict]) -> dict[str, str]:
    """One chart per kernel; returns chart id by kernel."""
    ids: dict[str, str] = {}
    by_kernel: dict[str, list[dict]] = {}
    for r in rows.p50:
        by_kernel.setdefault(r["kernel"], []).append(r)
    for rep in rows.representative:
        kernel = rep["kernel"]
        if kernel in by_kernel:
            ids[kernel] = _p50_id(kernel)
            specs[ids[kernel]] = charts.p50_spec(kernel, rep["workload"], by_kernel[kernel])
    return ids


def _busiest_kernel(rows: ReportData, ids: dict[str, str]) -> str:
    """The kernel chart with the most points: the one PNG of the per-kernel section."""
    counts: dict[str, int] = {}
    for r in rows.p50:
        counts[r["kernel"]] = counts.get(r["kernel"], 0) + 1
    return ids[max(sorted(ids), key=lambda k: counts.get(k, 0))]


SPEEDUP_TEXT = (
    "Each point is Liger's speedup over one baseline at one Liger version: baseline p50 divided by "
    "Liger p50, both measured in the same upstream run on the same GPU, workload and pass (the "
    "<code>speedup_history</code> view). A speedup is a ratio, so it is comparable across a kernel's "
    "x sweep: each point is the <b>geometric mean over the whole sweep</b>; the tooltip gives the lowest "
    "and highest speedup in it. Pick the GPU and the pass above the chart. Only kernels measured on "
    "the chosen GPU appear."
)
P50_TEXT = (
    "p50 of every implementation across Liger versions, one chart per kernel and one panel per GPU, "
    "with the p20&ndash;p80 band as a bar (the <code>version_history</code> view, release builds: a release "
    "stands on the median of its release run and the other runs of its commit, else on its main-branch "
    "rows). Raw timings at different x "
    "values are not comparable, so each kernel is shown at <b>one representative workload</b>: the one "
    "measured in the most versions, then on the most GPUs and providers, then the largest x. Pick the "
    "measurement (metric · pass) above each chart; y scales are per GPU."
)
REGRESSIONS_TEXT = (
    "From the <code>regressions</code> view: consecutive builds (releases and nightly runs) of each Liger "
    "series whose p50 moved by more than the threshold (5% unless set), also once the baselines' drift is "
    "taken out, and by more than the series' run-to-run noise allows (docs/VERDICTS.md). The table lists "
    "the regressions of Liger implementations, newest build first, largest change first."
)
NOISE_TEXT = (
    "From the <code>series_noise</code> view: for every Liger speed series, the smallest change that one "
    "run against one run can call a regression without false alarms, read from its gh-pages run history. "
    "The chart counts, per kernel and pass, the series that cannot see a 25% change; the table lists "
    "them, noisiest first. Their verdicts are mostly <code>inconclusive</code>: these benchmarks need "
    "more repetitions upstream before they can guard anything."
)
OPEN_TEXT = (
    "From the <code>regressions</code> view: the steps between consecutive builds at which a series regressed "
    "(any implementation), that nobody acknowledged (<code>liger-warehouse ack</code>) or muted and that the "
    "later builds did not retract (<code>confirmation</code>), newest build first, confirmed before suspected, "
    "largest change first. Each kernel links to its page: its p50 per gh-pages run with the change points, "
    "environment shifts and triage marked, and all its regressions."
)
CHANGE_POINTS_TEXT = (
    "From the <code>change_points</code> view: the gh-pages runs where a Liger series' p50 shifted, found "
    "by e-divisive means over its run history (series with at least 10 runs). Newest run first."
)


def _header(rows: ReportData) -> str:
    c = rows.counts
    links = " ".join(
        f'<a href="#{i}">{t}</a>'
        for i, t in (
            ("open", "open regressions"),
            ("speedup", "speedup"),
            ("p50", "p50 per kernel"),
            ("regressions", "regressions"),
            ("change-points", "change points"),
            ("noise", "noise"),
        )
    )
    return (
        "<h1>Liger-Kernel benchmark report</h1>"
        f'<p class="meta">Lake snapshot <code>{rows.snapshot}</code>, published '
        f"{html.escape(rows.created_at)}: {c['results']:,} results in {c['series']:,} series, "
        f"{c['versions']} Liger versions, {c['gpus']} GPUs.</p><nav>{links}</nav>"
    )


def _section(anchor: str, title: str, text: str, has_chart: bool, table: data.Table | None = None) -> str:
    parts = [f'<section id="{anchor}"><h2>{title}</h2><p>{text}</p>']
    parts.append(page.chart_div(anchor) if has_chart else '<p class="note">No data for this chart.</p>')
    if table is not None:
        parts.append(page.table_html(table))
    return "".join(parts) + "</section>"


def _open_section(rows: ReportData) -> str:
    """The open regressions, each kernel linking to its page, and a link to every kernel's page."""
    opened = rows.open.total if rows.open else 0
    confirmed = sum(c for _, c in rows.open_counts.values())
    summary = (
        f'<p class="meta"><b>{opened}</b> open regressions ({confirmed} confirmed) in {len(rows.open_counts)} '
        f"kernels. Every kernel's page (open regressions beside it):</p>"
    )
    table = (
        page.table_html(rows.open, {"kernel": kernel_page.href})
        if rows.open
        else '<p class="note">This warehouse has no regressions view.</p>'
    )
    nav = kernel_page.kernel_nav(rows.kernels, rows.open_counts)
    return f'<section id="open"><h2>Open regressions</h2><p>{OPEN_TEXT}</p>{summary}{nav}{table}</section>'


def _p50_section(rows: ReportData, ids: dict[str, str]) -> str:
    nav = " ".join(f'<a href="#{ids[k]}">{html.escape(k)}</a>' for k in ids)
    charts_html = (
        "".join(
            f'<h3 id="{ids[k]}">{html.escape(k)}</h3>'
            f'<p class="note"><a href="{html.escape(kernel_page.href(k))}">{html.escape(k)} per gh-pages run, '
            f"with its regressions and triage</a></p>{page.chart_div(ids[k])}"
            for k in ids
        )
        or '<p class="note">No data for these charts.</p>'
    )
    return (
        f'<section id="p50"><h2>p50 across versions, per kernel</h2><p>{P50_TEXT}</p>'
        f'<nav class="kernels">{nav}</nav>{charts_html}</section>'
    )


def _footer(rows: ReportData) -> str:
    missing = (
        f'<p class="note">This warehouse has no {", ".join(rows.missing)} view: those sections are empty.</p>'
        if rows.missing
        else ""
    )
    return (
        f'<footer>{missing}<p class="note">Made by <code>liger-warehouse report</code> from the lake. '
        f"Charts: Vega-Lite {html.escape(vl_version())} through Altair; Vega "
        f"{html.escape(vl_convert.get_vega_version())} and vega-embed "
        f"{html.escape(vl_convert.get_vega_embed_version())} are in <code>{SCRIPT}</code> in the report's folder, "
        "so the pages need no network."
        "</p></footer>"
    )
