"""A cut of the upstream mirror for tests that need a whole refresh, but not all of upstream."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import require_mirror


def small_mirror(target: Path, commits: int = 2, runs: int = 3) -> Path:
    """The mirror cut to its newest revisions (``commits`` per CSV, ``runs`` gh-pages runs): the
    same kinds of data, regressions between versions included, in a fraction of the run time."""
    shutil.copytree(require_mirror(), target)
    for listing in (target / "commits").glob("*.json"):
        listing.write_text(json.dumps(json.loads(listing.read_text())[:commits]))
    runs_file = target / "gh-pages" / "benchmarks" / "commits.txt"
    runs_file.write_text("\n".join(runs_file.read_text().split()[-runs:]) + "\n")
    return target
