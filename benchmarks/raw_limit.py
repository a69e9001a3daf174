"""The raw limit: DuckDB's own CSV-to-Parquet copy of the same gzipped CSV files ingest reads.

    python -m benchmarks.raw_limit --mirror DIR --out FILE.parquet

Reads every file the mirror lists (``read_csv`` over the ``.csv.gz`` files themselves, so
DuckDB decompresses the same bytes the warehouse does) and writes one Parquet file. Prints one
JSON line with the seconds of the ``COPY`` statement alone, the rows and the bytes read.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb

from benchmarks.synthetic.suite import MAIN_STEMS


def csv_files(mirror: Path) -> list[Path]:
    """The gzipped CSV of every revision the mirror lists, as ``MirrorUpstream`` reads them."""
    files = []
    for stem in MAIN_STEMS:
        listing = mirror / "commits" / f"{stem}.json"
        commits = json.loads(listing.read_text()) if listing.is_file() else []
        files += [mirror / "raw" / c["sha"] / "benchmark" / "data" / f"{stem}.csv.gz" for c in commits]
    runs = mirror / "gh-pages" / "benchmarks" / "commits.txt"
    names = runs.read_text().split() if runs.is_file() else []
    files += [mirror / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz" for run in names]
    return files


def copy_sql(files: list[Path], out: Path) -> str:
    """DuckDB sniffs the column types from the first file; ``x_value`` is text in some files
    (named model configs), so it alone is given as VARCHAR. Every other column stays typed by
    DuckDB's sniffer (numbers, timestamps), as the warehouse types them."""
    listed = ", ".join(f"'{f}'" for f in files)
    csv = f"read_csv([{listed}], header = true, types = {{'x_value': 'VARCHAR'}})"
    return f"COPY (FROM {csv}) TO '{out}' (FORMAT parquet)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    files = csv_files(args.mirror)
    con = duckdb.connect()
    started = time.perf_counter()
    con.execute(copy_sql(files, args.out))
    seconds = time.perf_counter() - started
    rows = con.execute(f"select count(*) from read_parquet('{args.out}')").fetchone()[0]
    out = {"ok": True, "seconds": seconds, "rows": rows, "files": len(files)}
    out |= {"gz_bytes": sum(f.stat().st_size for f in files), "parquet_bytes": args.out.stat().st_size}
    args.out.unlink()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
