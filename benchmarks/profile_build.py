"""Profile the three ingest steps of a full build, outside Dagster, in one process.

    python -m benchmarks.profile_build --mirror DIR [--out docs/profiles] [--label 1e6] [--no-profile] [--keep DIR]

Runs the pure code the ``refresh`` job's steps call (``upstream_snapshots``:
``fetch_revisions``; ``warehouse_tables``: ``GenerationBuilder.build``;
``staged_generation_audit``: the checks of ``pipelines/defs/warehouse/checks.py``) against a
fresh warehouse in a temporary directory, each step under its own pyinstrument profiler, and
writes ``full-build-<label>-<step>.txt`` per step. Prints the wall and CPU seconds of each
step (CPU: all threads of the process, so DuckDB's and Polars' threads count).
``--no-profile`` times the steps without the profiler (its overhead is a few percent).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from liger_warehouse.audit import checks
from liger_warehouse.build.ingest import GenerationBuilder
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.fetch import fetch_revisions
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream


def upstream_snapshots(storage: Storage, mirror: Path):
    source = open_upstream(UpstreamSettings(str(mirror)), storage)
    listing = source.list()
    gens = GenerationStore(storage)
    known = set(gens.read_table(gens.current(), "dim_upstream_revision", ["revision_digest"]).column(0).to_pylist())
    fetched = fetch_revisions(source, RawStore(storage), listing, known)
    return listing, fetched.contents


def warehouse_tables(storage: Storage, listing, contents):
    gens = GenerationStore(storage)
    with gens.try_lock("build"):
        builder = GenerationBuilder(gens, RawStore(storage))
        return builder.build(listing, contents)


def staged_generation_audit(storage: Storage, gen_id: str) -> list[checks.CheckOutcome]:
    """The body of ``staged_generation_audit`` without the Dagster results."""
    gens = GenerationStore(storage)
    gen, prior = gens.load(gen_id), gens.current()
    con = checks.connect_changes(gens, gen, prior)
    prior_files = {p.file for p in prior.parts("fact_revision_member")}
    new_revisions = [p.key for p in gen.parts("fact_revision_member") if p.file not in prior_files]
    outcomes = [
        *checks.digest_uniqueness(con),
        *checks.part_invariants(gens, gen, prior),
        *checks.referential_integrity(con),
        checks.quantile_order(con),
        checks.reconciliation(con, "audited_revision"),
        checks.reconciliation_with_raw(con, RawStore(storage), new_revisions),
    ]
    con.close()
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("docs/profiles"))
    parser.add_argument("--label", default="run")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--keep", type=Path, help="build the warehouse here (kept) instead of a temporary directory")
    args = parser.parse_args()
    command = "python " + " ".join(sys.argv)

    def step(name, fn, *a):
        profiler = None
        if not args.no_profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
        with profiler or contextlib.nullcontext():
            started, cpu = time.perf_counter(), time.process_time()
            out = fn(*a)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"{name}: {seconds:.2f} s wall, {cpu:.2f} s CPU (all threads)", flush=True)
        if profiler is not None:
            text = profiler.output_text(unicode=True, color=False, show_all=False)
            load = os.getloadavg()[0]
            head = f"# {command}\n# step {name}: {seconds:.2f} s wall, {cpu:.2f} s CPU; load average {load:.1f}\n\n"
            (args.out / f"full-build-{args.label}-{name}.txt").write_text(head + text)
        return out

    with contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory(prefix="prof-w-") as root:
        storage = Storage(root)
        listing, contents = step("upstream_snapshots", upstream_snapshots, storage, args.mirror)
        gen = step("warehouse_tables", warehouse_tables, storage, listing, contents)
        outcomes = step("staged_generation_audit", staged_generation_audit, storage, gen.id)
        failed = [o for o in outcomes if not o.passed]
        print(
            f"rows: {gen.rows('fact_result')} results, {gen.rows('fact_revision_member')} members; "
            f"audit failures: {[(o.table, o.name, o.examples) for o in failed]}"
        )


if __name__ == "__main__":
    main()
