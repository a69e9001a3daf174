"""Profile a full build outside Dagster, in one process: the code the ``refresh`` job's two steps call.

    python -m benchmarks.profile_build --mirror DIR [--out docs/profiles] [--label 1e6] [--no-profile] [--keep DIR]
        [--json FILE]

``upstream_snapshots``: ``fetch_revisions`` into the raw store; ``lake_tables``: ``publish``,
the one DuckLake transaction (ingest, change points, every derived table and view of ``sql/``,
the blocking checks). Each step runs against a fresh warehouse in a temporary directory, under
its own pyinstrument profiler, which writes ``full-build-<label>-<step>.txt``. Prints the wall
and CPU seconds of each step (CPU: all threads of the process, so DuckDB's threads count), then
one JSON line with the same figures, the bytes of the lake's data directory and each phase of the
publishing transaction (``publish.PHASES``): its seconds and the process's peak RSS at its end.
``--no-profile`` times the steps without the profiler (its overhead is a few percent); ``--json``
also writes that line, with the command, machine and commit, to a file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import machine, repository
from liger_warehouse.build.publish import Published, publish
from liger_warehouse.lake.connect import held_revisions
from liger_warehouse.lake.location import Lake
from liger_warehouse.model.revisions import UpstreamListing
from liger_warehouse.runtime import progress
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.fetch import fetch_revisions
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream


def upstream_snapshots(root: Path, mirror: Path) -> tuple[UpstreamListing, dict[str, str]]:
    """The body of the ``upstream_snapshots`` asset: list upstream, store what the lake lacks."""
    storage = Storage(str(root))
    source = open_upstream(UpstreamSettings(str(mirror)), storage)
    listing = source.list()
    fetched = fetch_revisions(source, RawStore(storage), listing, held_revisions(Lake.of(str(root))))
    return listing, fetched.contents


def lake_tables(root: Path, listing: UpstreamListing, contents: dict[str, str]) -> Published:
    """The body of the ``lake_tables`` asset: one publishing transaction."""
    return publish(Lake.of(str(root)), RawStore(Storage(str(root))), listing, contents)


def data_bytes(root: Path) -> int:
    """Bytes of every file under the lake's data directory."""
    return sum(p.stat().st_size for p in (root / "lake").rglob("*") if p.is_file())


class PublishPhases:
    """A progress listener: each publish phase's seconds and the peak RSS at its end."""

    def __init__(self) -> None:
        self.phases: list[dict] = []
        self.last = time.perf_counter()

    def __call__(self, task: str, completed: int, total: int, label: str) -> None:
        if task != "publish":
            return
        now = time.perf_counter()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.phases.append({"phase": label, "seconds": now - self.last, "peak_rss": peak})
        print(f"  {label}: {now - self.last:.2f} s, peak RSS {peak / 2**30:.2f} GiB", file=sys.stderr, flush=True)
        self.last = now


class Stepper:
    """Runs a step, timed and (unless ``out`` is None) profiled into ``out``."""

    def __init__(self, out: Path | None, label: str) -> None:
        self.out, self.label, self.times = out, label, {}
        self.command = "python -m benchmarks.profile_build " + shlex.join(sys.argv[1:])

    def __call__(self, name: str, fn: Callable, *args):
        profiler = None
        if self.out is not None:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
        with profiler or contextlib.nullcontext():
            started, cpu = time.perf_counter(), time.process_time()
            result = fn(*args)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        self.times[name] = {"seconds": seconds, "cpu": cpu}
        print(f"{name}: {seconds:.2f} s wall, {cpu:.2f} s CPU (all threads)", file=sys.stderr, flush=True)
        if profiler is not None:
            text = profiler.output_text(unicode=True, color=False, show_all=False)
            load = os.getloadavg()[0]
            head = (
                f"# {self.command}\n# step {name}: {seconds:.2f} s wall, {cpu:.2f} s CPU; load average {load:.1f}\n\n"
            )
            (self.out / f"full-build-{self.label}-{name}.txt").write_text(head + text)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("docs/profiles"))
    parser.add_argument("--label", default="run")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--keep", type=Path, help="build the warehouse here (kept) instead of a temporary directory")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    started = machine("")
    step = Stepper(None if args.no_profile else args.out, args.label)
    with contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory(prefix="prof-w-") as r:
        root = Path(r)
        listing, contents = step("upstream_snapshots", upstream_snapshots, root, args.mirror)
        phases = PublishPhases()
        with progress.listening(phases):
            published = step("lake_tables", lake_tables, root, listing, contents)
        summary = published.summary
        out = {"ok": published.snapshot is not None, "steps": step.times, "phases": phases.phases}
        out["lake_bytes"] = data_bytes(root)
        out |= {k: v for k, v in summary.items() if k.startswith(("results_", "revisions_"))}
        print(json.dumps(out, default=str))
    if args.json:
        recorded = {"command": step.command, "machine": started, "repository": repository(), **out}
        args.json.write_text(json.dumps(recorded, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
