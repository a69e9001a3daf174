"""What a person waits for on the real history: command start-up and the refreshes of a night.

    python -m benchmarks.startup [--mirror DIR] [--work DIR] [--runs 7] [--builds 3] [--write] [--json FILE]

Every figure is the wall time of ``liger-warehouse`` run as an operator runs it (a new process,
the installed entry point), side by side in one run:

* a full build from nothing, from the upstream mirror;
* a refresh that finds the mirror's newest revisions: the 2 newest commits of each CSV (a CSV
  with one commit gives its one) and the 2 newest runs; a copy of the mirror without them is
  built first, untimed, and each repeat refreshes a fresh copy of that warehouse;
* a refresh that finds nothing new;
* the reading commands: ``--help``, ``sql "select 1"``, ``regressions`` for one kernel and GPU,
  ``status``.

The project's modules are compiled to bytecode first, as a wheel install does at install time
and an editable one on its first run: an environment that sets ``PYTHONDONTWRITEBYTECODE``
(containers often do) would otherwise compile them again in every process (the 21 modules
``sql`` imports take about 0.02 s to compile; the whole project 0.13 s).

``--write`` rewrites the "startup" block of docs/BENCHMARK-OUTPUT.md; ``--json`` writes the
figures (seconds: median and range of the repeats) for ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import liger_warehouse
import pipelines
from benchmarks.sections import write_section
from benchmarks.stats import Summary, summarize

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARK-OUTPUT.md"
SECTION = "startup"
DEFAULT_MIRROR = Path(__file__).resolve().parent.parent.parent / "shared" / "upstream" / "liger-kernel"
# The newest revisions: the 2 newest commits of each CSV and the 2 newest runs.
NEWEST_COMMITS, NEWEST_RUNS = 2, 2
# "{root}" is the warehouse the reads run against.
# The refresh that finds what the cut left out; the section says how many revisions that is.
NEWEST = "refresh finding the newest revisions"
READS = {
    "`--help`": ["--help"],
    '`sql "select 1"`': ["sql", "-w", "{root}", "select 1"],
    "`regressions` for one kernel and GPU": [
        *("regressions", "-w", "{root}", "--base", "0.6.3", "--head", "0.7.0"),
        *("--gpu", "H100", "--kernel", "cross_entropy"),
    ],
    "`status`": ["status", "-w", "{root}"],
}
# Each target: the figure, its bound (seconds, or a fraction of the full build) and its kind
# (issue 39: a read-only command starts within 0.5 s; the newest revisions cost <= 0.4x a build).
TARGETS = [
    ('`sql "select 1"`', 0.5, "s"),
    ("`regressions` for one kernel and GPU", 1.0, "s"),
    (NEWEST, 0.4, "x"),
    ("refresh finding nothing new", 0.15, "x"),
    ("refresh finding nothing new", 4.0, "s"),
]


def command() -> list[str]:
    """The installed ``liger-warehouse`` entry point."""
    return [str(Path(sys.executable).with_name("liger-warehouse"))]


def without_newest(mirror: Path, target: Path) -> int:
    """Copy ``mirror`` to ``target`` as it was before its newest revisions (the files stay;
    upstream's listings no longer name them); returns how many revisions were left out."""
    shutil.copytree(mirror, target)
    left_out = 0
    for listing in (target / "commits").glob("*.json"):
        commits = json.loads(listing.read_text())
        listing.write_text(json.dumps(commits[NEWEST_COMMITS:]))
        left_out += min(NEWEST_COMMITS, len(commits))
    runs = target / "gh-pages" / "benchmarks" / "commits.txt"
    runs.write_text("\n".join(runs.read_text().split()[:-NEWEST_RUNS]) + "\n")
    return left_out + NEWEST_RUNS


@dataclass
class Bench:
    env: dict[str, str]

    def seconds(self, args: list[str]) -> float:
        started = time.perf_counter()
        done = subprocess.run([*command(), *args], env=self.env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"liger-warehouse {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return elapsed

    def refresh(self, root: Path, upstream: Path) -> float:
        return self.seconds(["refresh", "-w", str(root), "--upstream", str(upstream)])


def compile_project() -> None:
    """Bytecode for every module of the project, as a wheel install writes it."""
    for package in (liger_warehouse, pipelines):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def measure(mirror: Path, work: Path, runs: int, builds: int) -> tuple[dict[str, Summary], int]:
    """The figures, and how many revisions the refresh of the newest revisions found."""
    compile_project()
    env = {**os.environ, "DAGSTER_HOME": str(work / "dagster"), "LIGER_WAREHOUSE_CACHE_DIR": str(work / "cache")}
    (work / "dagster").mkdir(parents=True)
    (work / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    bench = Bench(env)
    full = [bench.refresh(work / f"full-{i}", mirror) for i in range(builds)]
    newest = without_newest(mirror, work / "mirror-before")
    bench.refresh(work / "before", work / "mirror-before")
    eight = []
    for i in range(builds):
        shutil.copytree(work / "before", work / f"eight-{i}")
        eight.append(bench.refresh(work / f"eight-{i}", mirror))
    root = work / "full-0"
    figures = {
        "full build": summarize(full),
        NEWEST: summarize(eight),
        "refresh finding nothing new": summarize([bench.refresh(root, mirror) for _ in range(runs)]),
    }
    for name, args in READS.items():
        argv = [arg.format(root=root) for arg in args]
        bench.seconds(argv)  # the first run warms the page cache
        figures[name] = summarize([bench.seconds(argv) for _ in range(runs)])
    return figures, newest


def _s(x: Summary) -> str:
    return f"{x.median:.2f} s ({x.low:.2f}-{x.high:.2f})"


def target_rows(figures: dict[str, Summary]) -> list[str]:
    build = figures["full build"].median
    rows = []
    for name, bound, kind in TARGETS:
        value = figures[name].median / build if kind == "x" else figures[name].median
        shown = f"{value:.2f}x the full build" if kind == "x" else f"{value:.2f} s"
        wanted = f"<= {bound}x the full build" if kind == "x" else f"<= {bound} s"
        met = "met" if value <= bound else f"**missed** by {value / bound:.1f}x"
        rows.append(f"| {name} {wanted} | {shown} | {met} |")
    return rows


def section(figures: dict[str, Summary], newest: int, args: argparse.Namespace, load: float) -> str:
    lines = [
        "## Start-up and the refreshes of a night, on the real history",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with `python -m benchmarks.startup "
        f"--runs {args.runs} --builds {args.builds} --write` on the upstream mirror: {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {load:.1f} at the start. Wall time of the",
        "installed `liger-warehouse` command in a new process, median (fastest-slowest) of the repeats,",
        "the project's modules compiled to bytecode first (as a wheel install does).",
        f"The newest revisions are {newest}: the 2 newest commits of each CSV (one CSV has a single",
        "commit) and the 2 newest gh-pages runs.",
        "",
        "| command | wall |",
        "|---|---:|",
        *(f"| {name} | {_s(x)} |" for name, x in figures.items()),
        "",
        "| target | measured | |",
        "|---|---|---|",
        *target_rows(figures),
    ]
    return "\n".join(lines) + "\n"


def record(figures: dict[str, Summary], newest: int, args: argparse.Namespace, load: float) -> dict:
    """The figures as data, in the shape of ``benchmarks/results/``."""
    return {
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "topic": "start-up and the refreshes of a night, on the real history",
        "runs": [
            {
                "time": f"{datetime.now(UTC):%H:%M}",
                "command": f"python -m benchmarks.startup --runs {args.runs} --builds {args.builds}",
                "machine": f"{os.cpu_count()} cores, load average {load:.1f} at the start",
                "note": f"the newest revisions are {newest}",
                "figures": {
                    name: {"median": x.median, "range": [x.low, x.high], "n": x.n} for name, x in figures.items()
                },
            }
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    parser.add_argument("--work", type=Path, help="scratch directory (default: a new temporary one)")
    parser.add_argument("--runs", type=int, default=7, help="repeats of each reading command and no-change refresh")
    parser.add_argument("--builds", type=int, default=3, help="repeats of the full build and the 8-revision refresh")
    parser.add_argument("--write", action="store_true", help=f"update docs/{OUTPUT.name}")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="liger-startup-") as scratch:
        work = args.work or Path(scratch)
        figures, newest = measure(args.mirror, work, args.runs, args.builds)
    text = section(figures, newest, args, load)
    print(text)
    if args.write:
        write_section(OUTPUT, SECTION, text)
    if args.json:
        args.json.write_text(json.dumps(record(figures, newest, args, load), indent=1) + "\n")


if __name__ == "__main__":
    main()
