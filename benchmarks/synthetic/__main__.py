"""``python -m benchmarks.synthetic --out DIR --revisions N --rows-per-revision M --seed S``

Writes a synthetic upstream mirror and prints what it holds (revisions, rows, distinct
results, bytes) as JSON.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from benchmarks.synthetic.generate import Settings, generate


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.synthetic", description=__doc__.split("\n\n")[1])
    parser.add_argument("--out", type=Path, required=True, help="mirror directory to write")
    parser.add_argument("--revisions", type=int, required=True, help="upstream revisions in the history")
    parser.add_argument("--rows-per-revision", type=int, default=3000, help="rows of a nightly run (default 3000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gh-pages-fraction", type=float, default=0.9, help="share of revisions that are runs")
    parser.add_argument(
        "--write-from", type=int, default=0, help="skip the files of earlier revisions (already in --out)"
    )
    args = parser.parse_args(argv)
    settings = Settings(args.revisions, args.rows_per_revision, args.seed, args.gh_pages_fraction)
    stats = asdict(generate(args.out, settings, args.write_from))
    stats.pop("files")
    print(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()
