"""A reader of liger.duckdb for the concurrency tests, run as its own process.

``python -m tests.reliability.reader <db> <fresh|held> <stop-file> <out.json>`` queries every
view in a loop until ``stop-file`` exists, then writes how many rounds it made, every error it
met and every generation it saw. ``fresh`` opens a new read-only connection per round (what a
dashboard does); ``held`` keeps one connection open throughout (a notebook). A separate process,
because DuckDB shares one database instance between connections to a path within a process.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import duckdb

from tests.plain_duckdb import open_views


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    sql = "select view_name from duckdb_views() where not internal and schema_name = 'main' order by 1"
    return [name for (name,) in con.execute(sql).fetchall()]


def _round(con: duckdb.DuckDBPyConnection) -> str:
    for view in _views(con):
        # Names come from the database itself; identifiers cannot be bound parameters.
        con.execute(f'select count(*) from "{view}"').fetchall()
    return con.execute("select generation_id from warehouse_generation").fetchone()[0]


def main(db: str, mode: str, stop: str, out: str) -> None:
    rounds, errors, seen = 0, [], []
    held = open_views(Path(db)) if mode == "held" else None
    ready = Path(out + ".ready")
    while not Path(stop).exists():
        try:
            if held is not None:
                generation = _round(held)
            else:
                with open_views(Path(db)) as con:
                    generation = _round(con)
            if generation not in seen:
                seen.append(generation)
                Path(out + ".seen").write_text(json.dumps(seen))
            rounds += 1
        except Exception as exc:  # every error is the finding; keep reading
            errors.append(f"{type(exc).__name__}: {exc}")
        ready.touch()
        time.sleep(0.05)  # a busy reader, not a CPU hog on a two-core CI runner
    Path(out).write_text(json.dumps({"rounds": rounds, "errors": errors, "generations": seen}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
