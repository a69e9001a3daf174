"""The report's Vega-Lite charts, built with Altair from the rows of ``liger_warehouse.report.data``.

Every chart carries its data inline (no URL to fetch at view time) and keeps its interactive
choices (GPU, pass, measurement) as bound parameters, so the static PNG render shows the
default choice and the HTML lets the reader switch.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from functools import cache

import altair as alt

VERDICT_COLORS = alt.Scale(domain=["regression", "improvement", "environment"], range=["#c0392b", "#27ae60", "#95a5a6"])
DEFAULT_MODE = "full"
DEFAULT_MEASUREMENT = "speed · full (ms)"
FONT = "Helvetica, Arial, sans-serif"
# Charts name their data, and the rows and the config go into the finished spec (``to_spec``):
# Altair deep-copies a chart at every composing step, which costs seconds over a page of charts.
DATASET = "points"
DATA = alt.Data(name=DATASET)


# Readable defaults for the page and the PNGs: larger labels than Vega-Lite's 10-11 px.
CONFIG = alt.Config(
    font=FONT,
    axis=alt.AxisConfig(labelFontSize=11, titleFontSize=12, gridColor="#e6e6e6"),
    header=alt.HeaderConfig(labelFontSize=12, labelFontWeight="bold", titleFontSize=12),
    legend=alt.LegendConfig(labelFontSize=11, titleFontSize=12, labelLimit=260),
    title=alt.TitleConfig(fontSize=15, subtitleFontSize=12, subtitleColor="#555", anchor="start"),
    view=alt.ViewConfig(stroke="#d0d0d0"),
).to_dict()


def to_spec(chart: alt.TopLevelMixin, rows: list[dict]) -> dict:
    """The Vega-Lite spec of ``chart`` with ``rows`` inlined as its dataset."""
    spec = chart.to_dict()
    spec["config"] = CONFIG
    spec["datasets"] = {DATASET: rows}
    return spec


def _in_rank_order(rows: Iterable[dict], name: str = "version", rank: str = "version_rank") -> list[str]:
    return [v for v, _ in sorted({(r[name], r[rank]) for r in rows}, key=lambda p: (p[1] is None, p[1]))]


def _most_common(rows: list[dict], field: str) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[field]] = counts.get(r[field], 0) + 1
    return max(sorted(counts), key=lambda k: counts[k])


def _version_axis(label_angle: int = -45) -> alt.X:
    """Versions in release order; only those left after the chart's filter take up room."""
    return alt.X(
        "version:O",
        sort=alt.EncodingSortField("version_rank", op="min"),
        title="Liger version",
        axis=alt.Axis(labelAngle=label_angle),
    )


def speedup_chart(rows: list[dict]) -> alt.TopLevelMixin:
    """Small multiples, one per kernel: the geometric-mean speedup of each Liger provider over
    each baseline across versions, for one GPU and pass (chosen above the chart)."""
    gpus = sorted({r["gpu"] for r in rows})
    modes = sorted({r["mode"] for r in rows})
    gpu = alt.param(name="gpu", value=_most_common(rows, "gpu"), bind=alt.binding_select(options=gpus, name="GPU "))
    mode = alt.param(
        name="mode",
        value=DEFAULT_MODE if DEFAULT_MODE in modes else modes[0],
        bind=alt.binding_select(options=modes, name="pass "),
    )
    tooltip = [
        alt.Tooltip("kernel:N"),
        alt.Tooltip("version:N", title="Liger version"),
        alt.Tooltip("liger_provider:N", title="Liger"),
        alt.Tooltip("baseline_provider:N", title="baseline"),
        alt.Tooltip("speedup:Q", format=".2f", title="speedup (geo-mean)"),
        alt.Tooltip("min_speedup:Q", format=".2f", title="lowest over the sweep"),
        alt.Tooltip("max_speedup:Q", format=".2f", title="highest over the sweep"),
        alt.Tooltip("workloads:Q", title="workloads in the sweep"),
    ]
    x = _version_axis(label_angle=-90)  # a dozen versions in a small panel: upright labels
    y = alt.Y("speedup:Q", scale=alt.Scale(type="log"), title="speedup (\u00d7, log)")
    color = alt.Color("baseline_provider:N", title="baseline", legend=alt.Legend(orient="right"))
    # Lines and points are separate layers: a line with a point overlay gets a filled-symbol
    # legend, which would draw the dash legend as empty circles.
    lines = (
        alt.Chart()
        .mark_line(strokeWidth=1.8)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=alt.StrokeDash(
                "liger_provider:N",
                title="Liger provider",
                legend=alt.Legend(orient="right", symbolType="stroke", symbolStrokeWidth=2, symbolSize=500),
            ),
            detail="liger_provider:N",
        )
    )
    points = alt.Chart().mark_point(filled=True, size=30, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip)
    parity = alt.Chart().mark_rule(color="#888", strokeDash=[3, 3]).encode(y=alt.datum(1))
    return (
        alt.FacetChart(
            data=DATA,
            spec=alt.layer(parity, lines, points).properties(width=190, height=125),
            facet=alt.Facet("kernel:N", title=None, header=alt.Header(labelFontSize=12)),
            columns=5,
        )
        .transform_filter("datum.gpu == gpu && datum.mode == mode")
        .add_params(gpu, mode)
        .properties(
            # The title names the chosen GPU and pass: a PNG render has no pickers to show them.
            title=alt.Title(
                alt.ExprRef("'Liger speedup over each baseline across versions: ' + gpu + ', ' + mode + ' pass'"),
                subtitle=[
                    "Baseline p50 / Liger p50 from the same run, geometric mean over each kernel's x sweep; "
                    "above the dashed line Liger is faster.",
                ],
            )
        )
    )


def p50_spec(kernel: str, workload: str, rows: list[dict]) -> dict:
    """p50 (with its p20-p80 band) of one kernel's representative workload across versions:
    one panel per GPU, one colour per implementation, a measurement picker above."""
    measurements = tuple(sorted({r["measurement"] for r in rows}))
    default = DEFAULT_MEASUREMENT if DEFAULT_MEASUREMENT in measurements else _most_common(rows, "measurement")
    columns = min(len({r["gpu"] for r in rows}), 3)
    # Kernels share a handful of layouts: compose each once, then only the title differs.
    spec = copy.deepcopy(_p50_layout(measurements, default, columns))
    spec["title"] = {
        "text": {"expr": f"{json.dumps(kernel)} + ': ' + measurement"},
        "subtitle": f"workload {workload}; p50 with its p20\u2013p80 band",
    }
    spec["datasets"] = {DATASET: rows}
    return spec


@cache
def _p50_layout(measurements: tuple[str, ...], default: str, columns: int) -> dict:
    measurement = alt.param(
        name="measurement", value=default, bind=alt.binding_select(options=list(measurements), name="measurement ")
    )
    x = _version_axis()
    # Full opacity in the legend: the faint p20-p80 bars would otherwise wash its swatches out.
    color = alt.Color(
        "implementation:N", title="implementation", legend=alt.Legend(orient="top", columns=4, symbolOpacity=1)
    )
    tooltip = [
        alt.Tooltip("implementation:N"),
        alt.Tooltip("version:N", title="Liger version"),
        alt.Tooltip("p50:Q", format=".4~g"),
        alt.Tooltip("p20:Q", format=".4~g"),
        alt.Tooltip("p80:Q", format=".4~g"),
        alt.Tooltip("unit:N"),
        alt.Tooltip("results:Q", title="results for this version"),
    ]
    band = alt.Chart().mark_rule(strokeWidth=3, opacity=0.35).encode(x=x, y="p20:Q", y2="p80:Q", color=color)
    line = (
        alt.Chart()
        .mark_line(point=alt.OverlayMarkDef(size=35), strokeWidth=1.8)
        .encode(x=x, y=alt.Y("p50:Q", scale=alt.Scale(zero=False), title="p50"), color=color, tooltip=tooltip)
    )
    chart = (
        alt.FacetChart(
            data=DATA,
            spec=alt.layer(band, line).properties(width=260, height=180),
            facet=alt.Facet("gpu:N", title=None),
            columns=columns,
        )
        .transform_filter("datum.measurement == measurement")
        .add_params(measurement)
        .resolve_scale(y="independent")
    )
    return to_spec(chart, [])


def regression_counts_chart(rows: list[dict]) -> alt.TopLevelMixin:
    """How many Liger series regressed or improved at each version step, and how many moved with
    an environment shift (grey: not the code)."""
    return (
        alt.Chart(DATA)
        .mark_bar()
        .encode(
            x=_version_axis().title("head version (compared with the previous one)"),
            xOffset=alt.XOffset("verdict:N", scale=alt.Scale(domain=["regression", "improvement", "environment"])),
            y=alt.Y("steps:Q", title="series"),
            color=alt.Color("verdict:N", scale=VERDICT_COLORS, legend=alt.Legend(orient="top", title=None)),
            tooltip=["version:N", "verdict:N", "steps:Q"],
        )
        .properties(
            width=1000,
            height=240,
            title=alt.Title(
                "Liger regressions and improvements per version step",
                subtitle="Series whose p50 moved past the threshold and out of its run-to-run noise (docs/VERDICTS.md)",
            ),
        )
    )


def noise_chart(rows: list[dict]) -> alt.TopLevelMixin:
    """How many Liger speed series of each kernel and pass cannot see a 25% change."""
    return (
        alt.Chart(DATA)
        .transform_filter("datum.too_noisy > 0")
        .transform_calculate(label="datum.kernel + ' · ' + datum.mode + ' · ' + datum.gpu")
        .mark_bar(color="#c0392b")
        .encode(
            y=alt.Y("label:N", sort="-x", title=None, axis=alt.Axis(labelLimit=420)),
            x=alt.X("too_noisy:Q", title="Liger speed series too noisy to see a 25% change"),
            tooltip=["kernel:N", "mode:N", "gpu:N", "series:Q", "too_noisy:Q",
                     alt.Tooltip("median_detectable_change:Q", format=".0%")],
        )
        .properties(
            width=700,
            title=alt.Title(
                "Benchmarks too noisy to guard a 25% change",
                subtitle="Smallest change one run against one run can call, from each series' gh-pages history",
            ),
        )
    )  # fmt: skip


def change_point_counts_chart(rows: list[dict]) -> alt.TopLevelMixin:
    """How many Liger series shifted at each gh-pages run."""
    runs = _in_rank_order(rows, name="run", rank="run_seq")
    return (
        alt.Chart(DATA)
        .mark_bar()
        .encode(
            x=alt.X("run:O", sort=runs, title="gh-pages run (upstream order)", axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("change_points:Q", title="change points", stack=True),
            color=alt.Color("verdict:N", scale=VERDICT_COLORS, legend=alt.Legend(orient="top", title=None)),
            tooltip=["run:N", "verdict:N", "change_points:Q"],
        )
        .properties(
            width=1000,
            height=240,
            title=alt.Title(
                "Change points in Liger series, per gh-pages run",
                subtitle="The run where a series' p50 shifted (e-divisive means over its run history)",
            ),
        )
    )
