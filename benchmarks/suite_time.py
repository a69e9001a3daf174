"""How long the README's test command takes, and on what: the wall time, the CPU time of every
process it started, and each test file's share (issue 39: `.ci/run` under 12 minutes).

    python -m benchmarks.suite_time --json benchmarks/results/<date>-test-suite.json

The suite runs as CI runs it (`python -m pytest -q`, its xdist workers), with ``--durations=0``.
A file's share is the sum of its tests' setup, call and teardown as pytest reports them, so it
includes the time a worker waited for the others' CPU.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.machine import ROOT, machine, repository

DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+?)::")
PASSED = re.compile(r"^=* ?(\d+) passed")


def measure() -> dict:
    """One run of the suite: wall and CPU seconds, its outcome and the seconds per test file."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--durations=0", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    per_file: Counter[str] = Counter()
    passed = None
    for line in proc.stdout.splitlines():
        if match := DURATION.match(line):
            per_file[match.group(3)] += float(match.group(1))
        elif match := PASSED.match(line):
            passed = int(match.group(1))
    return {
        "exit_code": proc.returncode,
        "passed": passed,
        "wall_s": round(wall, 1),
        "cpu_user_s": round(after.ru_utime - before.ru_utime, 1),
        "cpu_system_s": round(after.ru_stime - before.ru_stime, 1),
        "per_file_s": {name: round(s, 1) for name, s in per_file.most_common()},
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="write the run here")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    args = parser.parse_args(argv)
    result = {
        "topic": "test suite",
        "command": "python -m benchmarks.suite_time" + (f" --json {args.json}" if args.json else ""),
        "machine": machine(args.note),
        "repository": repository(),
        **measure(),
    }
    print(json.dumps({k: v for k, v in result.items() if k != "per_file_s"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
