"""The nightly digest: what each new gh-pages run changed against the run uploaded before it, one
line per kernel and pass with the series behind it and its suspect commits, the commits between
the two runs, and the run as an environment shift when it is one (its flags apart). The flags of
the run before the new ones come back once, now confirmed or retracted by them (``follow_up``).

The verdicts are `compare_runs`' (docs/VERDICTS.md); this module only picks the new runs, groups
the flagged series and renders them as JSON (for programs and webhooks) and Markdown (for people).
A flag that is muted or acknowledged (docs/TRIAGE.md) is not alerted: it is counted in
``left_out`` with the reason.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

import duckdb

from liger_warehouse.lake.connect import snapshot_of
from liger_warehouse.report.publish import kernel_page_key, report_key
from liger_warehouse.store.storage import Storage

PREFIX = "digests"
# Runs digested when a warehouse has none yet: the newest only, so a first build alerts on last
# night, not on its whole history.
FIRST_DIGEST_RUNS = 1
DETAIL_COLUMNS = (
    "series_digest", "provider", "metric", "unit", "gpu", "workload", "base_p50", "head_p50", "change",
    "adjusted_change", "noise", "z", "confirmation", "annotations",
)  # fmt: skip
FLAGGED_SQL = f"""
    select kernel, mode, verdict, suspect_commits, muted, acknowledged, {", ".join(DETAIL_COLUMNS)}
    from compare_runs($base, $head)
    where verdict in ('regression', 'improvement', 'environment')
    order by kernel, mode, verdict, abs(adjusted_change) desc, gpu, workload, provider
"""
# The run as an environment shift, if it is one (docs/VERDICTS.md): shown apart, its flags
# counted but not listed as the code's.
SHIFT_SQL = "select direction, moved, series, moved_kernels from environment_shifts where run = $head"


@dataclass(frozen=True)
class RunStep:
    """A gh-pages run and the run uploaded before it."""

    previous: str
    run: str


def runs_in_order(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every gh-pages run, in upstream's upload order."""
    return [run for (run,) in con.execute("select run from gh_pages_runs() order by seq, run").fetchall()]


def new_steps(runs: list[str], digested: set[str]) -> tuple[list[RunStep], RunStep | None]:
    """The steps into the runs after the newest digested one (the newest run alone when nothing
    was digested yet), and the step before them, whose flags they confirm or retract."""
    steps = [RunStep(previous, run) for previous, run in pairwise(runs)]
    done = [i for i, step in enumerate(steps) if step.run in digested]
    first = done[-1] + 1 if done else max(len(steps) - FIRST_DIGEST_RUNS, 0)
    return steps[first:], steps[first - 1] if first > 0 else None


def commits_between(con: duckdb.DuckDBPyConnection, step: RunStep) -> list[str]:
    """``<7-hex sha> <title>`` of each commit between the two runs' code, oldest first, as the
    lake keeps their compare (``fact_compare_commit``); empty when upstream gave none."""
    rows = con.execute(
        """select rtrim(left(sha, 7) || ' ' || coalesce(title, '')) from fact_compare_commit
           where base_run = $base and head_run = $head order by position""",
        {"base": step.previous, "head": step.run},
    ).fetchall()
    return [line for (line,) in rows]


def _lines(rows: list[dict]) -> list[dict]:
    """One line per kernel, pass and verdict, the series behind it worst first."""
    lines: dict[tuple, dict] = {}
    for row in rows:
        line = lines.setdefault(
            (row["kernel"], row["mode"], row["verdict"]),
            {k: row[k] for k in ("kernel", "mode", "verdict", "suspect_commits")} | {"series": []},
        )
        line["series"].append({column: row[column] for column in DETAIL_COLUMNS})
    for line in lines.values():
        line["worst_change"] = line["series"][0]["adjusted_change"]
        line["gpus"] = sorted({s["gpu"] for s in line["series"]})
        line["confirmed"] = sum(s["confirmation"] == "confirmed" for s in line["series"])
    return list(lines.values())


def _left_out(rows: list[dict]) -> list[dict]:
    """What triage keeps out of the alert, one entry per kernel, pass, verdict and reason."""
    counted = Counter(
        (r["kernel"], r["mode"], r["verdict"], "muted" if r["muted"] else f"acknowledged ({r['acknowledged']})")
        for r in rows
    )
    return [
        {"kernel": k, "mode": m, "verdict": v, "reason": r, "series": n} for (k, m, v, r), n in sorted(counted.items())
    ]


def _flagged(con: duckdb.DuckDBPyConnection, step: RunStep) -> tuple[list[dict], list[dict], int]:
    """The step's flags of the code to alert, those triage leaves out, and how many the
    environment explains."""
    cursor = con.execute(FLAGGED_SQL, {"base": step.previous, "head": step.run})
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    code = [r for r in rows if r["verdict"] != "environment"]
    triaged = [r for r in code if r["muted"] or r["acknowledged"] is not None]
    alerted = [r for r in code if not (r["muted"] or r["acknowledged"] is not None)]
    return alerted, triaged, len(rows) - len(code)


def digest_step(con: duckdb.DuckDBPyConnection, step: RunStep) -> dict:
    """The flagged series of one run against the run before it, with the commits in between."""
    alerted, left_out, environment = _flagged(con, step)
    lines = _lines(alerted)
    shift = con.execute(SHIFT_SQL, {"head": step.run}).fetchone()
    return {
        "run": step.run,
        "previous_run": step.previous,
        "regressions": sum(len(line["series"]) for line in lines if line["verdict"] == "regression"),
        "improvements": sum(len(line["series"]) for line in lines if line["verdict"] == "improvement"),
        "commits_between": commits_between(con, step),
        "lines": lines,
        "left_out": _left_out(left_out),
        "environment_shift": dict(zip(("direction", "moved", "series", "moved_kernels"), shift, strict=True))
        | {"flags": environment}
        if shift
        else None,
    }


def follow_up(con: duckdb.DuckDBPyConnection, step: RunStep) -> dict:
    """The flags of the step before the new runs, as the new runs now confirm or retract them."""
    alerted, left_out, _ = _flagged(con, step)
    decided = [r for r in alerted if r["confirmation"] != "suspected"]
    return {
        "run": step.run,
        "previous_run": step.previous,
        "lines": _lines(decided),
        "left_out": _left_out(left_out),
    }


def build_digest(con: duckdb.DuckDBPyConnection, steps: list[RunStep], before: RunStep | None = None) -> dict:
    """The digest of ``steps``: named by the newest run, one entry per run, the flags of the step
    ``before`` them as the new runs decide them, and the report of the lake snapshot it was read
    from (the outputs job writes it after the refresh)."""
    snapshot = snapshot_of(con)
    digest = {
        "digest": steps[-1].run,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [digest_step(con, step) for step in steps],
        "follow_up": follow_up(con, before) if before else None,
        "report": report_key(snapshot, "index.html"),
    }
    for entry in [*digest["runs"], *([digest["follow_up"]] if before else [])]:
        for line in entry["lines"]:
            line["chart"] = kernel_page_key(snapshot, line["kernel"])
    return digest


def digest_key(run: str, fmt: str) -> str:
    return f"{PREFIX}/{run}.{fmt}"


def stored_digests(storage: Storage) -> list[str]:
    """The stored digests by name (their newest run), oldest first."""
    keys = [key for key in storage.list(PREFIX) if key.endswith(".json")]
    digests = (json.loads(storage.read_text(key)) for key in keys)
    return [d["digest"] for d in sorted(digests, key=lambda d: (d["written_at"], d["digest"]))]


def digest_names(storage: Storage) -> set[str]:
    """The newest run of each stored digest, from the names alone: ``new_steps`` needs only the
    newest, and a digest covers the runs up to the one it is named by."""
    return {
        key.removeprefix(f"{PREFIX}/").removesuffix(".json") for key in storage.list(PREFIX) if key.endswith(".json")
    }


def write_digest(storage: Storage, digest: dict, markdown: str) -> str:
    """Store both forms, the JSON last: a digest whose JSON exists is whole (``digest_names``)."""
    storage.write_text(digest_key(digest["digest"], "md"), markdown)
    key = digest_key(digest["digest"], "json")
    storage.write_text(key, json.dumps(digest, indent=2, sort_keys=True) + "\n")
    return key


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def _noise(value: float | None) -> str:
    return "n/a" if value is None else f"±{value:.1%}"


def render_markdown(digest: dict) -> str:
    """The digest for people: a heading per run, a line per kernel and pass, the series below it;
    then what the new runs decided of the flags before them."""
    out = [f"# Liger benchmark digest: {digest['digest']}", ""]
    for entry in digest["runs"]:
        out += [
            f"## {entry['run']} against {entry['previous_run']}",
            "",
            f"{entry['regressions']} series slower, {entry['improvements']} faster "
            f"({len(entry['commits_between'])} commits between the runs).",
            "",
        ]
        if shift := entry.get("environment_shift"):
            out += [
                f"Environment shift: {shift['moved']} of {shift['series']} Liger timings of kernels whose code "
                f"did not change moved {shift['direction']} ({', '.join(shift['moved_kernels'])}); "
                f"{shift['flags']} series it explains are left out below.",
                "",
            ]
        out += line_items(entry)
        if entry["commits_between"]:
            out += ["", "Commits between the runs:", *(f"- {c}" for c in entry["commits_between"])]
        out.append("")
    if follow := digest.get("follow_up"):
        out += [f"## Since then: the flags of {follow['run']} against {follow['previous_run']}", ""]
        out += line_items(follow) or ["None confirmed or retracted."]
        out.append("")
    if digest["report"]:
        out.append(f"Charts: {digest['report']}")
    return "\n".join(out).rstrip() + "\n"


def line_items(entry: dict) -> list[str]:
    """A bullet per kernel, pass and verdict with its series below; then what triage left out."""
    out = []
    for line in entry["lines"]:
        suspects = f"; suspects: {', '.join(line['suspect_commits'])}" if line["suspect_commits"] else ""
        out.append(
            f"- **{line['kernel']}** {line['mode']}: {line['verdict']} in {len(line['series'])} series "
            f"({line['confirmed']} confirmed), worst {_percent(line['worst_change'])} ({', '.join(line['gpus'])})"
            f"{suspects} [chart]({line['chart']})"
        )
        out += [
            f"  - {s['provider']} {s['metric']} {s['workload']} on {s['gpu']}: {s['base_p50']:.4g} → "
            f"{s['head_p50']:.4g} {s['unit']}, {_percent(s['adjusted_change'])} (noise {_noise(s['noise'])}), "
            f"{s['confirmation']}" + "".join(f"; note: {note}" for note in s["annotations"] or [])
            for s in line["series"]
        ]
    if entry["left_out"]:
        out.append(
            "- Left out: "
            + "; ".join(
                f"{x['kernel']} {x['mode']} {x['verdict']} in {x['series']} series, {x['reason']}"
                for x in entry["left_out"]
            )
        )
    return out
