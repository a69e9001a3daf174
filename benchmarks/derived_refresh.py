"""What the publishing step (``lake_tables``: ingest, change points, every derived table, the
checks, in one transaction) costs in a refresh that finds one new gh-pages run, on a real mirror.

A copy of the mirror lists every gh-pages run but the newest; a warehouse is built from it, and
then, for each repeat, a copy of that warehouse is refreshed from the whole mirror. Printed: the
``lake_tables`` step of each of those refreshes, and of the full build, read from the Dagster
event log, with the whole refresh's wall time. ``benchmarks.derived_cost`` splits the derived
tables' share of it by table.

    python -m benchmarks.derived_refresh --mirror ../shared/upstream/liger-kernel --work /tmp/derived
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.scenarios import logged_steps

STEP = "lake_tables"


def _refresh(warehouse: Path, upstream: Path) -> tuple[float, float]:
    """The refresh's wall time and its publishing step, in seconds."""
    home = warehouse.with_name(warehouse.name + ".dagster")
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    started = time.perf_counter()
    subprocess.run(
        ["liger-warehouse", "refresh", "-w", str(warehouse), "--upstream", str(upstream)],
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    (step,) = [s for s in logged_steps(home) if s["step"] == STEP]
    return wall, step["end"] - step["start"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    held_back = args.work / "mirror-held-back"
    shutil.copytree(args.mirror, held_back)
    runs_file = held_back / "gh-pages" / "benchmarks" / "commits.txt"
    runs = runs_file.read_text().split()
    runs_file.write_text("\n".join(runs[:-1]) + "\n")
    base = args.work / "base"
    wall, step = _refresh(base, held_back)
    print(f"full build of {len(runs) - 1} runs: refresh {wall:.2f} s, {STEP} {step:.2f} s")
    steps = []
    for repeat in range(args.repeats):
        warehouse = args.work / f"plus-one-{repeat}"
        shutil.copytree(base, warehouse)
        wall, step = _refresh(warehouse, args.mirror)
        steps.append(step)
        print(f"one new run ({runs[-1]}): refresh {wall:.2f} s, {STEP} {step:.2f} s")
    print(f"{STEP} in a one-run refresh: median {statistics.median(steps):.2f} s of {len(steps)}")


if __name__ == "__main__":
    main()
