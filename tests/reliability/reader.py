"""A reader of the lake for the concurrency tests, run as its own process.

``python -m tests.reliability.reader <catalog> <fresh|held|slow> <stop-file> <out.json>`` queries
every table and view in a loop until ``stop-file`` exists, then writes how many rounds it made,
every error it met and every snapshot it saw. ``fresh`` attaches the catalog anew each round (what
a dashboard does); ``held`` keeps one connection open throughout (a notebook); ``slow`` is
``held`` keeping each round's transaction open ``SLOW_ROUND`` seconds, longer than SQLite's
default wait for a lock, so that a commit meets an open reader. A separate process, so that it
shares nothing with the writer but the files.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import duckdb

from tests.plain_duckdb import open_views

SLOW_ROUND = 8.0


def _round(con: duckdb.DuckDBPyConnection, linger: float = 0.0) -> int:
    """Every table and view counted in one transaction, so from one snapshot: the one returned.
    A failed round ends its transaction, so that one error does not become every later one."""
    con.execute("begin")
    try:
        snapshot = _counted(con, linger)
    except Exception:
        con.execute("rollback")
        raise
    con.execute("commit")
    return snapshot


def _counted(con: duckdb.DuckDBPyConnection, linger: float) -> int:
    names = con.execute(
        "select table_name from information_schema.tables where table_catalog = 'liger' order by 1"
    ).fetchall()
    for (name,) in names:
        # Names come from the catalog itself; identifiers cannot be bound parameters.
        con.execute(f'select count(*) from "{name}"').fetchall()
    (snapshot,) = con.execute("from liger.current_snapshot()").fetchone()
    time.sleep(linger)
    return snapshot


def main(catalog: str, mode: str, stop: str, out: str) -> None:
    rounds, errors, seen = 0, [], []
    held = open_views(Path(catalog)) if mode in ("held", "slow") else None
    linger = SLOW_ROUND if mode == "slow" else 0.0
    ready = Path(out + ".ready")
    while not Path(stop).exists():
        started = time.monotonic()
        try:
            if held is not None:
                snapshot = _round(held, linger)
            else:
                with open_views(Path(catalog)) as con:
                    snapshot = _round(con)
            if snapshot not in seen:
                seen.append(snapshot)
                # Replaced whole: the test peeks at it while this runs, and once read it empty.
                Path(out + ".seen.tmp").write_text(json.dumps(seen))
                os.replace(out + ".seen.tmp", out + ".seen")
            rounds += 1
        except Exception as exc:  # every error is the finding; keep reading
            errors.append(f"{type(exc).__name__}: {exc}")
        ready.touch()
        # Busy half the time: three readers that never paused took the cores of a two-core
        # runner from the refresh they are meant to overlap, and so made it last longer.
        time.sleep(max(0.05, time.monotonic() - started - linger))
    Path(out).write_text(json.dumps({"rounds": rounds, "errors": errors, "snapshots": seen}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
