"""The new rule's significance dial against the anchor rules. Turning the dial trades recall for
false alarms; an anchor rule is beaten when some setting of the rule (the dial, at the default
threshold or another, with or without the recent level) reaches its recall and flags fewer series,
both untouched ones and those of the identical pairs (the tables "The significance dial" and "At
equal recall" of docs/VERDICTS.md, and its plot)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import altair as alt

from benchmarks.verdict_data import Setting
from benchmarks.verdict_inject import DRIFT, SCOPES
from benchmarks.verdict_rules import ANCHOR_RULES
from benchmarks.verdict_tally import NEW, Results, Share, flagged, pooled, recall, table

DEFAULT = "significance 5"  # verdict_rule().significance
SCENARIOS = tuple((scope, drift) for scope in SCOPES for drift in (1.0, DRIFT))
DIAL_POINT = alt.OverlayMarkDef(color="black", size=20)
GRID_RULE = f"{NEW}, other settings"
COLOURS = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#000000"]  # the new rule in black


def scenario_name(scope: str, drift: float) -> str:
    return scope + ("" if drift == 1.0 else f", x{drift:g} drift")


@dataclass(frozen=True)
class Point:
    """One rule (or one setting of the dial) in one injection scenario."""

    label: str
    recall: Share
    untouched: Share  # untouched series flagged
    identical: Share  # series of the identical pairs flagged


def _point(results: Results, rule: str, label: str, scope: str, drift: float) -> Point:
    injected: Counter = pooled(results, scope, rule, drift)
    return Point(label, recall(injected), flagged(injected), flagged(pooled(results, "identical", rule)))


def dial(results: Results, scope: str, drift: float, settings: tuple[Setting, ...] | None = None) -> list[Point]:
    """The new rule at each significance of the dial, from the threshold alone up (or at each of
    ``settings``)."""
    chosen = results.grid.operating if settings is None else settings
    return [_point(results, f"{NEW}: {s.label}", s.label, scope, drift) for s in chosen]


def anchor(results: Results, rule: str, scope: str, drift: float) -> Point:
    return _point(results, rule, rule, scope, drift)


def at_equal_recall(points: list[Point], target: Point) -> Point | None:
    """The setting that reaches ``target``'s recall with the fewest untouched series flagged,
    among those that also flag fewer series of the identical pairs than ``target`` if any do (a
    setting that beats the target on both counts is the answer to "is it beaten?"); None when no
    setting reaches its recall."""
    reaching = [p for p in points if p.recall.value >= target.recall.value]
    fewer = [p for p in reaching if p.identical.value < target.identical.value]
    return min(fewer or reaching, key=lambda p: (p.untouched.value, p.identical.value), default=None)


def beaten(new: Point | None, target: Point, points: list[Point]) -> str:
    if new is None:
        return f"no: recall out of reach (at most {max(p.recall.value for p in points):.1%})"
    fewer_untouched = new.untouched.value < target.untouched.value
    fewer_identical = new.identical.value < target.identical.value
    if fewer_untouched and fewer_identical:
        return "yes"
    missing = [*([] if fewer_untouched else ["untouched"]), *([] if fewer_identical else ["identical pairs"])]
    return "no: not fewer flagged (" + ", ".join(missing) + ")"


def dial_table(results: Results) -> list[str]:
    header = ["significance", "identical pairs: flagged"]
    for scope, drift in SCENARIOS:
        header += [f"{scenario_name(scope, drift)}: recall", "untouched flagged"]
    curves = [dial(results, scope, drift) for scope, drift in SCENARIOS]
    rows = []
    for i, setting in enumerate(results.grid.operating):
        label = setting.label.removeprefix("significance ")
        row = [f"**{label}** (default)" if setting.label == DEFAULT else label, str(curves[0][i].identical)]
        for curve in curves:
            row += [str(curve[i].recall), str(curve[i].untouched)]
        rows.append(row)
    return table(header, rows)


def at_equal_recall_table(results: Results) -> list[str]:
    """Per anchor rule and scenario: the anchor, and the new rule at the setting (the dial, or the
    grid of thresholds and the base run alone) that reaches the anchor's recall with the fewest
    false alarms."""
    header = ["anchor rule", "scenario", "anchor: recall", "untouched flagged", "identical flagged",
              "new rule at", "recall", "untouched flagged", "identical flagged", "beaten"]  # fmt: skip
    rows = []
    for rule in ANCHOR_RULES:
        for scope, drift in SCENARIOS:
            points = dial(results, scope, drift, (*results.grid.operating, *results.grid.settings))
            target = anchor(results, rule, scope, drift)
            new = at_equal_recall(points, target)
            row = [rule, scenario_name(scope, drift), *map(str, (target.recall, target.untouched, target.identical))]
            if new is None:
                row += ["-"] * 4
            else:
                row += [new.label, *map(str, (new.recall, new.untouched, new.identical))]
            rows.append([*row, beaten(new, target, points)])
    return table(header, rows)


def plot(results: Results) -> alt.Chart:
    """Per injection scenario, recall against false alarms (untouched series flagged): each anchor
    rule a dot, the new rule's dial a line (its default a larger dot), its other settings (other
    thresholds, the base run alone) small grey dots. The x axis is logarithmic,
    0 drawn at 0.1%; the target is shaded."""
    values = []
    for scope, drift in SCENARIOS:
        scenario = scenario_name(scope, drift)
        values.append({"kind": "target", "scenario": scenario, "x": 0.001, "x2": 0.02, "y": 0.75, "y2": 1.0})
        points = [(rule, anchor(results, rule, scope, drift)) for rule in ANCHOR_RULES]
        points += [(NEW, p) for p in dial(results, scope, drift)]
        points += [(GRID_RULE, p) for p in dial(results, scope, drift, results.grid.settings)]
        for rule, p in points:
            kind = "default" if p.label in (*ANCHOR_RULES, DEFAULT) else "dial" if rule == NEW else "grid"
            alarms = p.untouched.value
            values.append({"kind": kind, "scenario": scenario, "rule": rule, "setting": p.label,
                           "false alarms": max(alarms, 0.001), "measured": alarms,
                           "recall": p.recall.value})  # fmt: skip
    x = alt.X("false alarms:Q", scale=alt.Scale(type="log", domain=[0.001, 1]), axis=alt.Axis(format="%"),
              title="untouched series flagged (log)")  # fmt: skip
    y = alt.Y("recall:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"),
              title="injected series called in the right direction")  # fmt: skip
    colour = alt.Color("rule:N", scale=alt.Scale(domain=[*ANCHOR_RULES, NEW], range=COLOURS))
    tooltip = ["rule:N", "setting:N", alt.Tooltip("measured:Q", format=".2%"), alt.Tooltip("recall:Q", format=".1%")]
    base = alt.Chart().encode(x=x, y=y)
    target = (
        alt.Chart()
        .transform_filter(alt.datum.kind == "target")
        .mark_rect(opacity=0.12, color="green")
        .encode(x="x:Q", x2="x2:Q", y="y:Q", y2="y2:Q")
    )
    curve = base.transform_filter(alt.datum.rule == NEW).mark_line(point=DIAL_POINT, color="black", strokeWidth=1)
    dots = base.transform_filter(alt.datum.kind == "default").mark_point(size=110, filled=True)
    grid = base.transform_filter(alt.datum.kind == "grid").mark_point(size=12, color="grey", opacity=0.6)
    layers = alt.layer(
        target, grid.encode(tooltip=tooltip), curve.encode(tooltip=tooltip), dots.encode(color=colour, tooltip=tooltip)
    )
    return layers.properties(width=300, height=220).facet(
        data=alt.Data(values=values),
        facet=alt.Facet("scenario:N", title=None, sort=[scenario_name(s, d) for s, d in SCENARIOS]),
        columns=2,
        title="Recall against false alarms: anchor rules, the new rule's dial and other settings (target shaded)",
    )
