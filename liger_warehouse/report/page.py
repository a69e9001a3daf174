"""One HTML page of the report: every chart spec and its data inlined, and the Vega, Vega-Lite and
vega-embed JavaScript (vl-convert's bundle, written once per report, ``paths.SCRIPT``) loaded by a
relative ``<script src>`` from the report's folder; nothing fetched from the network at view time."""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import re
import uuid
from collections.abc import Callable, Mapping
from functools import cache

import vl_convert

from liger_warehouse.lake.connect import cache_dir
from liger_warehouse.report.data import Table

# Columns of relative changes, shown as signed percentages.
SIGNED_PERCENT = ("change", "adjusted_change")
# vega-embed's "open in editor" action would post the spec to a web page: leave it out.
EMBED_OPTIONS = {"actions": {"export": True, "source": False, "compiled": False, "editor": False}, "renderer": "svg"}

STYLE = """
body { font: 15px/1.45 Helvetica, Arial, sans-serif; color: #222; margin: 0 auto; max-width: 1400px;
       padding: 0 24px 48px; }
h1 { margin: 28px 0 4px; } h2 { margin-top: 44px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { margin: 28px 0 4px; font-family: Menlo, Consolas, monospace; font-size: 16px; }
.meta { color: #555; } nav a { margin-right: 10px; white-space: nowrap; }
nav.kernels { font-size: 13px; line-height: 1.9; }
.chart { margin: 8px 0 16px; min-height: 120px; overflow-x: auto; }
.note { color: #555; font-size: 13px; } code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: left; white-space: nowrap; }
th { background: #f6f6f6; position: sticky; top: 0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.regression { color: #c0392b; } td.improvement { color: #27ae60; } td.confirmed { font-weight: bold; }
td a { color: inherit; } .badge { color: #c0392b; font-size: 12px; }
.key span { margin-right: 14px; white-space: nowrap; } ul.triage { font-size: 14px; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid #e3e3e3; }
.vega-embed .chart-wrapper { display: flex; flex-direction: column; }
.vega-embed .vega-bindings { order: -1; margin: 0 0 8px; font-size: 13px; }
.vega-bindings .vega-bind { display: inline-block; margin-right: 16px; }
"""

# Charts are embedded one after the other, so the page is readable while the rest render.
EMBED_SCRIPT = """
const embedOptions = %s;
(async () => {
  for (const el of document.querySelectorAll('div.chart[data-chart]')) {
    const spec = JSON.parse(document.getElementById('spec-' + el.dataset.chart).textContent);
    try { await vegaEmbed(el, spec, embedOptions); } catch (e) { el.textContent = 'chart failed: ' + e; }
  }
})();
"""


@cache
def javascript(vl_version: str) -> str:
    """Vega, Vega-Lite and vega-embed as one script that defines ``window.vegaEmbed``.

    vl-convert bundles it on every call (seconds); the result depends only on the vl-convert and
    Vega-Lite versions, so it is kept in the local cache directory once made.
    """
    path = cache_dir() / "js" / f"vega-embed-bundle-{vl_convert.__version__}-vl{vl_version}.js"
    if path.exists():
        return path.read_text(encoding="utf-8")
    bundle = vl_convert.javascript_bundle(vl_version=vl_version)
    tmp = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(bundle, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache only costs the bundling time next run
        with contextlib.suppress(OSError):
            tmp.unlink()
    return bundle


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def script_json(value: object) -> str:
    """JSON safe inside a <script> element: no ``</`` can close it early."""
    return json.dumps(value, separators=(",", ":"), default=str).replace("</", "<\\/")


def chart_div(chart_id: str) -> str:
    return f'<div class="chart" id="chart-{chart_id}" data-chart="{chart_id}"></div>'


def _cell(column: str, value: object, href: str | None = None) -> str:
    if value is None:
        return '<td class="num">&ndash;</td>'
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, list):
        return f"<td>{html.escape('; '.join(map(str, value)))}</td>"
    if isinstance(value, float):
        if column in SIGNED_PERCENT:
            return f'<td class="num">{value:+.1%}</td>'
        if column == "pvalue":
            return f'<td class="num">{value:.1e}</td>'
        text = "&ndash;" if math.isnan(value) else f"{value:.4g}"
        return f'<td class="num">{text}</td>'
    css = f' class="{value}"' if value in ("regression", "improvement", "confirmed") else ""
    text = html.escape(str(value))
    if href:
        text = f'<a href="{html.escape(href)}">{text}</a>'
    return f"<td{css}>{text}</td>"


def _row(table: Table, row: tuple, links: Mapping[str, Callable[[object], str]]) -> str:
    cells = (
        _cell(c, v, links[c](v) if c in links and v is not None else None)
        for c, v in zip(table.columns, row, strict=True)
    )
    return "<tr>" + "".join(cells) + "</tr>"


def table_html(table: Table, links: Mapping[str, Callable[[object], str]] | None = None) -> str:
    """A table section's rows, with the cells of the columns in ``links`` linking where it says."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = "".join(_row(table, row, links or {}) for row in table.rows)
    shown = f"the first {len(table.rows)} of {table.total}" if table.total > len(table.rows) else f"all {table.total}"
    return (
        f'<p class="note">Showing {shown} rows. All of them: <code>{html.escape(table.query)}</code></p>'
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )


def page(title: str, body: str, specs: dict[str, dict], script: str) -> str:
    """The whole document: ``body`` plus every spec as a JSON script and the embedding code;
    ``script`` is the relative URL of the report's JavaScript bundle (``paths.script_src``)."""
    spec_tags = "".join(
        f'<script type="application/json" id="spec-{chart_id}">{script_json(spec)}</script>\n'
        for chart_id, spec in specs.items()
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n"
        f'<script src="{html.escape(script)}"></script>\n</head>\n<body>\n{body}\n{spec_tags}'
        f"<script>{EMBED_SCRIPT % script_json(EMBED_OPTIONS)}</script>\n</body>\n</html>\n"
    )
