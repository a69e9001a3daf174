"""The nightly digest: what each new gh-pages run changed against the run uploaded before it, one
line per kernel and pass with the series behind it and its suspect commits, the commits between
the two runs, and the run as an environment shift when it is one (its flags apart).

The verdicts are `compare_runs`' (docs/VERDICTS.md); this module only picks the new runs, groups
the flagged series and renders them as JSON (for programs and webhooks) and Markdown (for people).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

import duckdb

from liger_warehouse.lake.connect import snapshot_of
from liger_warehouse.report.publish import report_key
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.compare import run_pair

PREFIX = "digests"
# Runs digested when a warehouse has none yet: the newest only, so a first build alerts on last
# night, not on its whole history.
FIRST_DIGEST_RUNS = 1
DETAIL_COLUMNS = (
    "provider", "metric", "unit", "gpu", "workload", "base_p50", "head_p50", "change", "adjusted_change", "noise", "z",
)  # fmt: skip
FLAGGED_SQL = f"""
    select kernel, mode, verdict, suspect_commits, {", ".join(DETAIL_COLUMNS)}
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


def new_steps(runs: list[str], digested: set[str]) -> list[RunStep]:
    """The steps into the runs after the newest digested one (the newest run alone when nothing
    was digested yet)."""
    steps = [RunStep(previous, run) for previous, run in pairwise(runs)]
    done = [i for i, step in enumerate(steps) if step.run in digested]
    return steps[done[-1] + 1 :] if done else steps[-FIRST_DIGEST_RUNS:]


def commits_between(raw: RawStore, step: RunStep) -> list[str]:
    """``<7-hex sha> <title>`` of each commit between the two runs' code, oldest first; empty when
    upstream gave no compare (docs: the compares kept in the raw store)."""
    body = raw.get_compare(run_pair(step.previous, step.run).key)
    if body is None:
        return []
    commits = json.loads(body).get("commits") or []
    return [f"{c['sha'][:7]} {_title(c)}".rstrip() for c in commits]


def _title(commit: dict) -> str:
    """A commit message's first line: upstream's squash merges end it with ``(#PR)``."""
    return ((commit.get("commit") or {}).get("message") or "").split("\n", 1)[0]


def _lines(rows: list[tuple]) -> list[dict]:
    """One line per kernel, pass and verdict, the series behind it worst first."""
    lines: dict[tuple, dict] = {}
    for kernel, mode, verdict, suspects, *detail in rows:
        line = lines.setdefault(
            (kernel, mode, verdict),
            {"kernel": kernel, "mode": mode, "verdict": verdict, "suspect_commits": suspects, "series": []},
        )
        line["series"].append(dict(zip(DETAIL_COLUMNS, detail, strict=True)))
    for line in lines.values():
        line["worst_change"] = line["series"][0]["adjusted_change"]
        line["gpus"] = sorted({s["gpu"] for s in line["series"]})
    return list(lines.values())


def digest_step(con: duckdb.DuckDBPyConnection, raw: RawStore, step: RunStep) -> dict:
    """The flagged series of one run against the run before it, with the commits in between."""
    rows = con.execute(FLAGGED_SQL, {"base": step.previous, "head": step.run}).fetchall()
    lines = _lines([r for r in rows if r[2] != "environment"])
    shift = con.execute(SHIFT_SQL, {"head": step.run}).fetchone()
    environment = sum(r[2] == "environment" for r in rows)  # one compare_runs for both
    return {
        "run": step.run,
        "previous_run": step.previous,
        "regressions": sum(len(line["series"]) for line in lines if line["verdict"] == "regression"),
        "improvements": sum(len(line["series"]) for line in lines if line["verdict"] == "improvement"),
        "commits_between": commits_between(raw, step),
        "lines": lines,
        "environment_shift": dict(zip(("direction", "moved", "series", "moved_kernels"), shift, strict=True))
        | {"flags": environment}
        if shift
        else None,
    }


def build_digest(con: duckdb.DuckDBPyConnection, raw: RawStore, steps: list[RunStep]) -> dict:
    """The digest of ``steps``: named by the newest run, one entry per run, with the report of the
    lake snapshot it was read from (the outputs job writes it after the refresh)."""
    return {
        "digest": steps[-1].run,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [digest_step(con, raw, step) for step in steps],
        "report": report_key(snapshot_of(con), "index.html"),
    }


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
    """The digest for people: a heading per run, a line per kernel and pass, the series below it."""
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
        for line in entry["lines"]:
            suspects = f"; suspects: {', '.join(line['suspect_commits'])}" if line["suspect_commits"] else ""
            out.append(
                f"- **{line['kernel']}** {line['mode']}: {line['verdict']} in {len(line['series'])} series, "
                f"worst {_percent(line['worst_change'])} ({', '.join(line['gpus'])}){suspects}"
            )
            out += [
                f"  - {s['provider']} {s['metric']} {s['workload']} on {s['gpu']}: {s['base_p50']:.4g} → "
                f"{s['head_p50']:.4g} {s['unit']}, {_percent(s['adjusted_change'])} (noise {_noise(s['noise'])})"
                for s in line["series"]
            ]
        if entry["commits_between"]:
            out += ["", "Commits between the runs:", *(f"- {c}" for c in entry["commits_between"])]
        out.append("")
    if digest["report"]:
        out.append(f"Charts: {digest['report']}")
    return "\n".join(out).rstrip() + "\n"
