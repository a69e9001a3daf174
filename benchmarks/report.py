"""The benchmark results as Markdown: the machine, the command, one table per scenario and the
targets of issues 5 and 39 with their measured ratios."""

from __future__ import annotations

from benchmarks.stats import Summary, ratio, summarize

GIB = 2**30
MIB = 2**20
THROUGHPUT_TARGET = 0.2
BYTES_TARGET = 3.0  # the lake's Parquet over the gzipped CSV it was built from
INCREMENTAL_TARGET = 1.5
MEMORY_TARGET = 3 * GIB
EXAMPLE_TARGET = 1.0  # seconds
WHOLE_TARGET = 3.0  # times fact_result read whole
# The refresh's two steps: fetch upstream, then the one publishing transaction (ingest, change
# points, derived tables, checks). Outputs (exports, report) are another job.
CORE_STEPS = ("upstream_snapshots", "lake_tables")


def _s(x: Summary, unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    if not x.n:
        return "-"
    med, lo, hi = x.median / scale, x.low / scale, x.high / scale
    if x.n == 1:
        return f"{med:.{digits}f} {unit}"
    return f"{med:.{digits}f} {unit} ({lo:.{digits}f}-{hi:.{digits}f})"


def _n(value: float) -> str:
    return f"{value:,.0f}"


def _verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "**missed**")


def machine_section(machine: dict, command: str) -> list[str]:
    m = machine
    return [
        f"Measured {m['date']} on {m['cpu']} ({m['cores']} cores), {m['ram_gib']:.0f} GiB RAM, {m['os']}; "
        f"Python {m['python']}, DuckDB {m['duckdb']}, Polars {m['polars']}, PyArrow {m['pyarrow']}, "
        f"Dagster {m['dagster']}.",
        "",
        f"Load average (1 min) at start {m['load_start']:.2f}, at end {m['load_end']:.2f}"
        + (f" — {m['note']}" if m.get("note") else "")
        + ".",
        "",
        "Reproduce with:",
        "",
        "```bash",
        command,
        "```",
        "",
        "Every number is the median of the repeats, with the range (min-max) in brackets.",
    ]


def _builds(size: dict) -> list[dict]:
    """Builds that published a snapshot: a step after the publish that failed (named in the
    table) does not take the build's measurements away."""
    return [r["build"] for r in size["runs"] if r["build"]["ok"] or r["build"].get("published")]


def core_seconds(record: dict) -> float:
    """Seconds of the refresh's ingest steps (``CORE_STEPS``)."""
    return sum(s["seconds"] for s in record["steps"] if s["step"] in CORE_STEPS)


def _x(value: float) -> str:
    return "-" if value != value else f"{value:.2f}x"  # NaN: not measured


def full_build_rows(sizes: list[dict]) -> tuple[list[str], list[dict]]:
    lines = [
        "| results | input rows | revisions | refresh job | results/s | DuckDB COPY (raw limit) | rows/s raw "
        "| ratio (COPY time / job time) | ingest steps | their ratio | lake Parquet / gzipped CSV "
        "| peak RSS (tree) | Dagster start-up |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    targets = []
    for size in sizes:
        builds, raws = _builds(size), [r["raw"] for r in size["runs"] if r["raw"].get("ok")]
        failed = [
            r["build"]["error"] + (" (after publishing)" if r["build"].get("published") else "")
            for r in size["runs"]
            if not r["build"]["ok"]
        ]
        rows = size["mirror"]["rows"]
        job, copy = summarize([b["job"] for b in builds]), summarize([r["seconds"] for r in raws])
        results = builds[-1]["results"] if builds else size["mirror"]["results"]
        rss = summarize([b["peak_rss"] for b in builds])
        startup = summarize([b["startup"] for b in builds])
        r = ratio(copy.median, job.median)
        core = summarize([core_seconds(b) for b in builds])
        grown = (
            ratio(builds[-1].get("lake_bytes", float("nan")), size["mirror"]["gz_bytes"]) if builds else float("nan")
        )
        status = f" — failed: {failed[0]}" if failed else ""
        lines.append(
            f"| {_n(results)}{status} | {_n(rows)} | {size['revisions']} | {_s(job)} | "
            f"{_n(ratio(results, job.median)) if job.n else '-'} | {_s(copy)} | "
            f"{_n(ratio(rows, copy.median)) if copy.n else '-'} | {_x(r)} | {_s(core)} | "
            f"{_x(ratio(copy.median, core.median))} | {_x(grown)} | {_s(rss, 'GiB', GIB)} | {_s(startup)} |"
        )
        target = size["target_results"]
        if target >= 10**6:
            targets.append(
                {
                    "target": f"full build at {target:.0e} >= {THROUGHPUT_TARGET}x raw limit",
                    "measured": f"{_x(r)} (ingest steps {_x(ratio(copy.median, core.median))})",
                    "ok": (r >= THROUGHPUT_TARGET) if job.n and copy.n else None,
                }
            )
            targets.append(
                {
                    "target": f"lake Parquet of a full build at {target:.0e} <= {BYTES_TARGET:.0f}x the gzipped CSV",
                    "measured": _x(grown),
                    "ok": grown <= BYTES_TARGET if grown == grown else None,
                }
            )
        if target >= 10**7:
            ok = (rss.median <= MEMORY_TARGET) if rss.n else None
            targets.append({"target": "peak RSS at 1e7 <= 3 GiB", "measured": _s(rss, "GiB", GIB), "ok": ok})
    return lines, targets


def step_rows(records: list[dict], label: str) -> list[str]:
    """Median seconds and peak RSS per step of the job, over ``records`` (successful refreshes)."""
    names: list[str] = []
    for rec in records:
        names += [s["step"] for s in rec["steps"] if s["step"] not in names]
    cells = []
    for name in names:
        secs = summarize([s["seconds"] for rec in records for s in rec["steps"] if s["step"] == name])
        rss = summarize([s["peak_rss"] for rec in records for s in rec["steps"] if s["step"] == name])
        unfinished = any(s.get("unfinished") for rec in records for s in rec["steps"] if s["step"] == name)
        mark = " (unfinished)" if unfinished else ""
        cells.append(f"{name} {secs.median:.2f} s / {rss.median / GIB:.2f} GiB{mark}")
    return [f"| {label} | " + "<br>".join(cells) + " |"]


def incremental_rows(histories: list[dict]) -> tuple[list[str], list[dict]]:
    lines = [
        "| history (revisions) | results in history | refresh job, 1 new run | ratio to the smallest history "
        "| ingest steps | their ratio | Parquet written | peak RSS | wall incl. start-up |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base: tuple[float, float] | None = None
    targets = []
    for h in histories:
        runs = [r for r in h["runs"] if r["ok"]]
        job, core = summarize([r["job"] for r in runs]), summarize([core_seconds(r) for r in runs])
        base = base or (job.median, core.median)
        r, core_r = ratio(job.median, base[0]), ratio(core.median, base[1])
        written = summarize([r["parquet_written"] for r in runs])
        error = "" if runs else f" — failed: {(h['runs'] or [h['setup']])[0]['error']}"
        tables = runs[-1].get("parquet_written_by_table", {}) if runs else {}
        by_table = ", ".join(f"{t} {b / 1024:.0f} KiB" for t, b in sorted(tables.items(), key=lambda kv: -kv[1]))
        lines.append(
            f"| {h['history']}{error} | {_n(h['setup']['results'])} | {_s(job)} | {_x(r)} | "
            f"{_s(core)} | {_x(core_r)} | "
            f"{_s(written, 'MiB', MIB)}{f' ({by_table})' if by_table else ''} | "
            f"{_s(summarize([r['peak_rss'] for r in runs]), 'GiB', GIB)} | "
            f"{_s(summarize([r['wall'] for r in runs]))} |"
        )
        if h is histories[-1] and len(histories) > 1:
            targets.append(
                {
                    "target": f"incremental at {h['history']} <= {INCREMENTAL_TARGET}x at "
                    f"{histories[0]['history']} revisions",
                    "measured": f"{_x(r)} (ingest steps {_x(core_r)})",
                    "ok": (r <= INCREMENTAL_TARGET) if job.n else None,
                }
            )
    return lines, targets


def no_change_rows(histories: list[dict]) -> tuple[list[str], list[dict]]:
    lines = [
        "| history (revisions) | requests (304 Not Modified) | content requests | content bytes "
        "| Parquet bytes written | job (beyond start-up) | Dagster start-up |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst_content, worst_written = 0, 0
    for h in histories:
        runs = [r for r in h["no_change"] if not r["warm_up"] and r["ok"]]
        if not runs:
            continue
        content = max(r["content_bytes"] for r in runs)
        written = max(r["parquet_written"] for r in runs)
        worst_content, worst_written = max(worst_content, content), max(worst_written, written)
        req = summarize([r["requests"] for r in runs])
        not_modified = summarize([r["not_modified"] for r in runs])
        lines.append(
            f"| {h['history']} | {req.median:.0f} ({not_modified.median:.0f}) | "
            f"{max(r['content_requests'] for r in runs)} | {content} | {written} | "
            f"{_s(summarize([r['job'] for r in runs]))} | {_s(summarize([r['startup'] for r in runs]))} |"
        )
    measured = f"{worst_content} content bytes, {worst_written} Parquet bytes"
    ok = worst_content == 0 and worst_written == 0
    return lines, [
        {
            "target": "no-change refresh: no content downloaded, 0 Parquet bytes written",
            "measured": measured,
            "ok": ok if len(lines) > 2 else None,
        }
    ]


def _latency_rows(queries: dict, limit: float, baseline: str | None = None) -> tuple[list[str], list[tuple]]:
    """One table row per query, and (name, measure) of each: seconds, or the ratio to ``baseline``."""
    base = summarize(queries[baseline]["seconds"]).median if baseline else None
    lines, measured = [], []
    for name, q in queries.items():
        if "error" in q:  # it did not fit DuckDB's memory limit
            lines.append(f"| `{name}` | failed: {q['error']} | — |{' — |' if base else ''} {_verdict(False)} |")
            measured.append((name, float("inf")))
            continue
        s = summarize(q["seconds"])
        value = ratio(s.median, base) if base else s.median
        shown = f" {value:.1f}x |" if base else ""
        verdict = "" if name == baseline else _verdict(value <= limit)
        lines.append(f"| `{name}` | {_s(s, 'ms', 1e-3, 0)} | {_n(q['rows'])} |{shown} {verdict} |")
        if name != baseline:
            measured.append((name, value))
    return lines, measured


def _query_target(target: str, measured: list[tuple], limit: float, unit: str) -> dict:
    missed = sorted((m for m in measured if not m[1] <= limit), key=lambda m: -m[1])
    worst = max(measured, key=lambda m: m[1])
    digits = 1 if unit == "x" else 2
    said = f"{len(measured) - len(missed)} of {len(measured)} within; worst `{worst[0]}` {worst[1]:.{digits}f}{unit}"
    return {"target": target, "measured": said, "ok": not missed}


def query_rows(views: dict | None) -> tuple[list[str], list[dict]]:
    """The README's example questions against 1 s, and every view read whole against
    ``fact_result`` read whole (issue 13)."""
    if not views or not views.get("ok"):
        return [f"Queries were not measured: {(views or {}).get('error', 'not run')}."], []
    example_lines, example_times = _latency_rows(views["examples"], EXAMPLE_TARGET)
    whole_lines, whole_ratios = _latency_rows(views["whole"], WHOLE_TARGET, "fact_result")
    picked = ", ".join(f"{k} `{v}`" for k, v in views["picks"].items() if k not in ("gpus", "threshold"))
    lines = [
        "The README's example questions, filtered as the README filters them; the values are the "
        f"busiest of each in this warehouse: {picked}.",
        "",
        "| question | latency | rows | <= 1 s |",
        "|---|---:|---:|---|",
        *example_lines,
        "",
        "Every view read whole into Arrow, beside `select * from fact_result` read whole into Arrow:",
        "",
        "| view | latency | rows | ratio to fact_result | <= 3x |",
        "|---|---:|---:|---:|---|",
        *whole_lines,
    ]
    targets = [
        _query_target(f"every README example <= {EXAMPLE_TARGET:.0f} s", example_times, EXAMPLE_TARGET, " s"),
        _query_target(f"every view whole <= {WHOLE_TARGET:.0f}x fact_result whole", whole_ratios, WHOLE_TARGET, "x"),
    ]
    return lines, targets


def query_section(results: dict) -> str:
    """The section "Queries at N results" of docs/BENCHMARK-OUTPUT.md: machine, command, both tables
    and the two targets."""
    lines, targets = query_rows(results)
    out = [f"## Queries at {_n(results.get('results', 0))} results, warm connection", ""]
    out += machine_section(results["machine"], results["command"])
    out += ["", *lines, "", "| target | measured | |", "|---|---|---|"]
    out += [f"| {t['target']} | {t['measured']} | {_verdict(t['ok'])} |" for t in targets]
    return "\n".join(out) + "\n"


def render(results: dict) -> str:
    out = ["## Results", ""]
    out += machine_section(results["machine"], results["command"])
    for earlier in results.get("merged", []):
        m = earlier["machine"]
        out += [
            "",
            f"Scenarios this run did not repeat are from the run of {m['date']} (load average "
            f"{m['load_start']:.2f} to {m.get('load_end', float('nan')):.2f}): `{earlier['command']}`.",
        ]
    targets: list[dict] = []
    if results["full"]:
        lines, t = full_build_rows(results["full"])
        targets += t
        out += [
            "",
            "### Full build",
            "",
            "Throughput of `refresh` from an empty warehouse (the job's wall time, "
            "Dagster start-up excluded) beside DuckDB's `COPY (FROM read_csv([...gz files])) TO '...parquet'` "
            "over the same gzipped CSV files, measured alternately in the same run. The lake's Parquet is every "
            "file of its data directory after the build, over the mirror's gzipped CSV bytes. Peak RSS is the "
            "whole process tree's.",
            "",
            *lines,
            "",
            "Per step (median seconds / peak RSS during the step):",
            "",
            "| results | steps |",
            "|---:|---|",
        ]
        for size in results["full"]:
            builds = _builds(size)
            if builds:
                out += step_rows(builds, _n(builds[-1]["results"]))
            elif any(r["build"]["steps"] for r in size["runs"]):
                failed = [r["build"] for r in size["runs"] if r["build"]["steps"]]
                out += step_rows(failed, f"{_n(size['mirror']['results'])} (failed run)")
    if results["incremental"]:
        lines, t = incremental_rows(results["incremental"])
        targets += t
        out += [
            "",
            "### Incremental refresh: one new nightly run",
            "",
            *lines,
            "",
            "Per step (median seconds / peak RSS during the step):",
            "",
            "| history | steps |",
            "|---:|---|",
        ]
        for h in results["incremental"]:
            runs = [r for r in h["runs"] if r["ok"]]
            if runs:
                out += step_rows(runs, str(h["history"]))
        lines, t = no_change_rows(results["incremental"])
        targets += t
        out += [
            "",
            "### No-change refresh",
            "",
            "Upstream served by `tests/fake_github/` from the same mirror; "
            "the first refresh of each warehouse through it fills the listing ETag cache and is not counted.",
            "",
            *lines,
        ]
    out += ["", "### Targets", "", "| target | measured | |", "|---|---|---|"]
    out += [f"| {t['target']} | {t['measured']} | {_verdict(t['ok'])} |" for t in targets]
    return "\n".join(out) + "\n"
