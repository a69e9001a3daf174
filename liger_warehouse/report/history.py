"""The chart of a kernel page: p50 per gh-pages run, one panel per GPU, with the runs marked where
a series shifted (change points), the machine moved (environment shifts), and people said
something (acknowledgements, annotations).

One measurement and one workload show at a time (pickers above the chart); the marks of runs
show whatever is picked, since they are about runs, not workloads. The points name their series
by number and take its labels by a lookup (``kernels`` explains why).
"""

from __future__ import annotations

import copy
import json
from functools import cache

import altair as alt

from liger_warehouse.report.charts import CONFIG, DEFAULT_MEASUREMENT
from liger_warehouse.report.kernels import KernelHistory

POINTS, SERIES, RUNS, CHANGES, MARKS = "points", "series", "runs", "changes", "marks"
SERIES_FIELDS = ["gpu", "workload", "measurement", "implementation", "unit", "digest"]
PICKED = "datum.measurement == measurement && datum.workload == workload"
# Each kind of mark: its colour, its rule's dash, and the symbol above the panel that carries its
# tooltip (each kind at its own height, so that the marks of one run do not hide each other).
MARK_STYLES = {
    "environment": ("#7f8c8d", [6, 3], "square", -6),
    "acknowledged": ("#1f3a93", [], "triangle-down", -16),
    "annotation": ("#8e44ad", [2, 2], "circle", -26),
}
SYMBOLS = {"square": "&#9632;", "triangle-down": "&#9660;", "circle": "&#9679;"}
CHANGE_COLORS = {"regression": "#c0392b", "improvement": "#27ae60"}
PANEL_HEIGHT = 190


def history_spec(page: KernelHistory) -> dict:
    """The Vega-Lite spec of ``page``'s chart, its rows inlined as named datasets."""
    measurements = page.measurements
    measurement = DEFAULT_MEASUREMENT if DEFAULT_MEASUREMENT in measurements else measurements[0]
    workload = default_workload(page, measurement)
    width = max(420, min(1100, 28 * len(page.runs)))
    return {
        "$schema": alt.SCHEMA_URL,
        "config": CONFIG,
        "title": {
            "text": {"expr": f"{json.dumps(page.kernel)} + ': ' + measurement"},
            "subtitle": {"expr": "'workload ' + workload + '; p50 per gh-pages run with its p20\u2013p80 band'"},
        },
        "params": [_picker("measurement", measurement, measurements), _picker("workload", workload, page.workloads)],
        "vconcat": [_panel(gpu, page.runs, width) for gpu in page.gpus],
        "resolve": {"scale": {"x": "independent", "y": "independent"}},
        "datasets": {
            SERIES: page.series,
            POINTS: page.points,
            RUNS: page.run_builds,
            CHANGES: page.changes,
            MARKS: page.marks,
        },
    }


def key_html() -> str:
    """What the marks mean, in the colours of the chart: the chart's legend names only implementations."""
    change = " ".join(
        f'<span style="color:{color}">&#9671; change point ({verdict})</span>'
        for verdict, color in CHANGE_COLORS.items()
    )
    marks = " ".join(
        f'<span style="color:{color}">{SYMBOLS[shape]} {kind}</span>'
        for kind, (color, _, shape, _) in MARK_STYLES.items()
    )
    return f'<p class="key">{change} {marks}</p>'


def default_workload(page: KernelHistory, measurement: str) -> str:
    """The workload of ``measurement`` with the most points, the largest x on a tie."""
    counts: dict[str, int] = {}
    measured = {s["s"]: s["workload"] for s in page.series if s["measurement"] == measurement}
    for point in page.points:
        if point["s"] in measured:
            counts[measured[point["s"]]] = counts.get(measured[point["s"]], 0) + 1
    order = {w: i for i, w in enumerate(page.workloads)}
    return max(counts, key=lambda w: (counts[w], order[w])) if counts else page.workloads[0]


def _picker(name: str, value: str, options: list[str]) -> dict:
    return {"name": name, "value": value, "bind": {"input": "select", "options": options, "name": f"{name} "}}


def _panel(gpu: str, runs: list[str], width: int) -> dict:
    """The panel of one GPU: the template with the GPU's rows and the kernel's runs on x."""
    panel = copy.deepcopy(_template())
    panel["title"] = {"text": gpu, "offset": 34}  # room for the symbols above the plot
    panel["width"], panel["height"] = width, PANEL_HEIGHT
    for layer in panel["layer"]:
        layer.setdefault("transform", []).append({"filter": f"datum.gpu == {json.dumps(gpu)}"})
        layer["encoding"]["x"]["scale"] = {"domain": runs}
    return panel


def _run_axis() -> alt.X:
    return alt.X("run:O", title="gh-pages run (upload order)", axis=alt.Axis(labelAngle=-50, labelFontSize=10))


def _labelled(name: str) -> alt.Chart:
    """A chart of dataset ``name`` with its series' labels looked up and the picked rows kept."""
    series = alt.LookupData(data=alt.Data(name=SERIES), key="s", fields=SERIES_FIELDS)
    return alt.Chart(alt.Data(name=name)).transform_lookup(lookup="s", from_=series).transform_filter(PICKED)


@cache
def _template() -> dict:
    """One GPU's panel, composed once: Altair takes a while to compose a chart."""
    x = _run_axis()
    color = alt.Color(
        "implementation:N", title="implementation", legend=alt.Legend(orient="top", columns=4, symbolOpacity=1)
    )
    points = _labelled(POINTS).transform_lookup(
        lookup="run", from_=alt.LookupData(data=alt.Data(name=RUNS), key="run", fields=["build"])
    )
    band = points.mark_rule(strokeWidth=3, opacity=0.35).encode(x=x, y="p20:Q", y2="p80:Q", color=color)
    line = points.mark_line(point=alt.OverlayMarkDef(size=30), strokeWidth=1.6).encode(
        x=x,
        y=alt.Y("p50:Q", scale=alt.Scale(zero=False), title="p50"),
        color=color,
        tooltip=[
            alt.Tooltip("implementation:N"),
            alt.Tooltip("run:N", title="gh-pages run"),
            alt.Tooltip("build:N", title="Liger build"),
            alt.Tooltip("p50:Q", format=".4~g"),
            alt.Tooltip("p20:Q", format=".4~g"),
            alt.Tooltip("p80:Q", format=".4~g"),
            alt.Tooltip("unit:N"),
            alt.Tooltip("digest:N", title="series"),
        ],
    )
    return _bare(alt.layer(band, line, _change_layer(x), *_mark_layers(x)))


def _change_layer(x: alt.X) -> alt.Chart:
    verdict_color = alt.condition(
        "datum.verdict == 'regression'",
        alt.value(CHANGE_COLORS["regression"]),
        alt.value(CHANGE_COLORS["improvement"]),
    )
    return (
        _labelled(CHANGES)
        .mark_point(shape="diamond", size=170, filled=False, strokeWidth=2.2, opacity=1)
        .encode(
            x=x,
            y="p50:Q",
            color=verdict_color,
            tooltip=[
                alt.Tooltip("verdict:N", title="change point"),
                alt.Tooltip("implementation:N"),
                alt.Tooltip("run:N", title="gh-pages run"),
                alt.Tooltip("change:Q", format="+.1%"),
                alt.Tooltip("before:Q", format=".4~g", title="median before"),
                alt.Tooltip("after:Q", format=".4~g", title="median after"),
                alt.Tooltip("pvalue:Q", format=".1e"),
                alt.Tooltip("digest:N", title="series"),
            ],
        )
    )


def _mark_layers(x: alt.X) -> list[alt.Chart]:
    """A rule across the panel and a symbol at its top, for each kind of mark."""
    layers = []
    tooltip = [alt.Tooltip("label:N", title="mark"), alt.Tooltip("run:N", title="gh-pages run"), alt.Tooltip("note:N")]
    for kind, (color, dash, shape, top) in MARK_STYLES.items():
        marks = alt.Chart(alt.Data(name=MARKS)).transform_filter(f"datum.kind == {json.dumps(kind)}")
        layers.append(marks.mark_rule(color=color, strokeDash=dash, strokeWidth=1.6, opacity=0.8).encode(x=x))
        symbol = marks.mark_point(shape=shape, filled=True, size=80, color=color, opacity=1)
        layers.append(symbol.encode(x=x, y=alt.value(top), tooltip=tooltip))
    return layers


def _bare(chart: alt.TopLevelMixin) -> dict:
    """A chart's spec without what belongs at the top level (schema, default config)."""
    spec = chart.to_dict()
    spec.pop("$schema", None)
    spec.pop("config", None)
    return spec
