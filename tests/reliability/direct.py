"""A refresh without Dagster: list a mirror directory, store what the lake lacks, ``publish()``.

``python -m tests.reliability.direct <root> <mirror> [catalog] [data]`` runs one in its own
process (two of them race on one lake in the concurrency tests) and prints one JSON line:
``{"snapshot": …, "results_added": …}``, or ``{"error": <type>, "message": …}`` with exit 1.
A start file (``LIGER_TEST_START``), when set, is waited for after the upstream is read and
before the publish begins, so two processes enter their transactions together.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from liger_warehouse.build.publish import Published, publish
from liger_warehouse.lake.connect import held_revisions
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.fetch import fetch_revisions
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream


def refresh_lake(root: str, mirror: str, lake: Lake, start: str | None = None) -> Published:
    """One refresh of ``lake`` (raw store in ``root``) from the mirror directory ``mirror``."""
    storage = Storage(root)
    raw = RawStore(storage)
    source = open_upstream(UpstreamSettings(upstream=mirror), storage)
    listing = source.list()
    fetched = fetch_revisions(source, raw, listing, held_revisions(lake))
    if start:
        Path(f"{start}.{os.getpid()}.ready").touch()
        while not Path(start).exists():
            time.sleep(0.01)
    return publish(lake, raw, listing, fetched.contents)


def main(root: str, mirror: str, catalog: str | None = None, data: str | None = None) -> int:
    lake = Lake.of(root, catalog, data)
    try:
        done = refresh_lake(root, mirror, lake, os.environ.get("LIGER_TEST_START"))
    except Exception as exc:  # the parent test judges the outcome
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        return 1
    print(json.dumps({"snapshot": done.snapshot, "results_added": done.summary["results_added"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
