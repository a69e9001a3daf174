"""Every table, view and macro answer of a warehouse before the DuckLake rebuild against the same
of the lake after it, both built from one mirror (issue 39, "Nothing else may move").

    # the old code (commit cc21f8c) in its own checkout and venv, with the DuckDB it ran on (2.0.1):
    git worktree add /tmp/oldcode cc21f8c && python3 -m venv /tmp/oldvenv \\
        && /tmp/oldvenv/bin/pip install -e /tmp/oldcode 'duckdb==2.0.1'
    LIGER_WAREHOUSE_DIR=/tmp/old-wh /tmp/oldvenv/bin/liger-warehouse refresh --upstream ../shared/upstream/liger-kernel
    liger-warehouse refresh -w /tmp/new-wh --upstream ../shared/upstream/liger-kernel
    /tmp/oldvenv/bin/python benchmarks/rebuild_equivalence.py dump old /tmp/old-wh /tmp/cmp/old
    python -m benchmarks.rebuild_equivalence dump new /tmp/new-wh /tmp/cmp/new
    python -m benchmarks.rebuild_equivalence compare /tmp/cmp/old /tmp/cmp/new --json FILE

``dump`` needs nothing of this project for ``old`` (it runs under the old code's venv), so it
reads liger.duckdb as the old README says. ``compare`` counts, per object, the rows only before
and only after (``except all`` both ways), then again with every double rounded to 12
significant digits, and the rows whose other columns (verdicts, digests, counts) differ;
``ingested_at``, the time of each build, is left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

MACRO_ANSWERS = {
    "macro_compare_runs": "select * from compare_runs('previous', 'latest')",
    "macro_compare_runs_base": "select * from compare_runs('previous', 'latest', recent := false)",
    "macro_compare_versions": "select * from compare_versions('0.6.3', '0.7.0')",
}


def _connect(kind: str, root: Path) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
    if kind == "old":
        con = duckdb.connect(str(root / "liger.duckdb"), read_only=True, config={"file_search_path": str(root)})
        names = "select view_name from duckdb_views() where not internal"
        return con, [n for (n,) in con.execute(names).fetchall()]
    from liger_warehouse.lake.connect import open_lake
    from liger_warehouse.lake.location import Lake

    con = open_lake(Lake.of(str(root)), read_only=True)
    names = (
        "select table_name from duckdb_tables() where database_name = 'liger' "
        "union all select view_name from duckdb_views() where database_name = 'liger' and not internal"
    )
    return con, [n for (n,) in con.execute(names).fetchall()]


def dump(kind: str, root: Path, out: Path) -> None:
    """Each object's rows, and the macro answers, as ``out/<name>.parquet``."""
    out.mkdir(parents=True, exist_ok=True)
    con, names = _connect(kind, root)
    for name, query in {**{n: f"select * from {n}" for n in names}, **MACRO_ANSWERS}.items():
        con.execute(f"copy ({query}) to '{out / name}.parquet' (format parquet)")


def _rounded(column: str, kind: str) -> str:
    if kind != "DOUBLE":
        return f'"{column}"'
    scale = f'coalesce(10 ** floor(log10(nullif(abs("{column}"), 0))), 1)'
    return f'round("{column}" / {scale}, 11) as "{column}"'


def _differ(con: duckdb.DuckDBPyConnection, a: str, b: str, select: str) -> list[int]:
    sql = "select count(*) from (select {s} from {x} except all select {s} from {y})"
    return [con.execute(sql.format(s=select, x=x, y=y)).fetchone()[0] for x, y in ((a, b), (b, a))]


def compare(old: Path, new: Path) -> list[dict]:
    con = duckdb.connect()
    rows = []
    for name in sorted({p.stem for p in old.glob("*.parquet")} | {p.stem for p in new.glob("*.parquet")}):
        a, b = (f"read_parquet('{d / name}.parquet')" for d in (old, new))
        if not ((old / f"{name}.parquet").exists() and (new / f"{name}.parquet").exists()):
            rows.append({"object": name, "only": "before" if (old / f"{name}.parquet").exists() else "after"})
            continue
        # when a row was ingested is the time of the build, not a figure
        columns = [c for c in con.execute(f"describe select * from {a}").fetchall() if c[0] != "ingested_at"]
        exact = ", ".join(f'"{c}"' for c, *_ in columns)
        others = ", ".join(f'"{c}"' for c, kind, *_ in columns if kind != "DOUBLE") or "1"
        rows.append(
            {
                "object": name,
                "rows": con.execute(f"select count(*) from {a}").fetchone()[0],
                "only_before_only_after": _differ(con, a, b, exact),
                "within_12_digits": _differ(con, a, b, ", ".join(_rounded(c, k) for c, k, *_ in columns)),
                "non_float_columns": _differ(con, a, b, others),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("kind", choices=["old", "new"])
    d.add_argument("root", type=Path)
    d.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.kind, args.root, args.out)
        return
    rows = compare(args.old, args.new)
    text = json.dumps({"objects": rows}, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
