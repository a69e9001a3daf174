"""Small upstream mirrors cut from the oldest revisions (``OLDEST_MIRROR``, a few kilobytes each),
so refreshes in these tests take a second.

A mirror here has the layout of ``shared/upstream/liger-kernel`` (see ``shared/README.md``), so
both the mirror reader and ``FakeGitHub`` serve it. Helpers add, drop and replace revisions the
way upstream would: a new commit of a path, a new gh-pages run, a force-push.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import OLDEST_MIRROR

DATA = "all_benchmark_data"
CUTEDSL = "all_benchmark_data_cutedsl"
CUTILE = "all_benchmark_data_cutile"
RUNS = Path("gh-pages") / "benchmarks"


@dataclass(frozen=True)
class Shape:
    """How many of the oldest commits of each path, and which gh-pages runs, a mirror keeps."""

    main: dict[str, int] = field(default_factory=dict)
    runs: tuple[str, ...] = ()


# The published state the tests start from, and the upstream that moved on from it: new commits
# on two paths, a first commit on the third, and one new run, so a refresh works at every stage.
BEFORE = Shape({DATA: 2, CUTILE: 1}, ("b6ed735",))
AFTER = Shape({DATA: 4, CUTEDSL: 1, CUTILE: 2}, ("b6ed735", "c1bdc24"))


def make_mirror(dst: Path, shape: Shape) -> Path:
    """A writable mirror at ``dst`` holding only what ``shape`` keeps."""
    (dst / "commits").mkdir(parents=True)
    for stem in (DATA, CUTEDSL, CUTILE):
        commits = json.loads((OLDEST_MIRROR / "commits" / f"{stem}.json").read_text())
        keep = commits[len(commits) - shape.main.get(stem, 0) :] if shape.main.get(stem) else []
        (dst / "commits" / f"{stem}.json").write_text(json.dumps(keep))
        for commit in keep:
            _copy(f"raw/{commit['sha']}/benchmark/data/{stem}.csv.gz", dst)
    (dst / RUNS).mkdir(parents=True)
    (dst / RUNS / "commits.txt").write_text("".join(f"{run}\n" for run in shape.runs))
    for run in shape.runs:
        _copy(f"{RUNS}/{run}/benchmark.csv.gz", dst)
    _copy(f"{RUNS}/golden_commits.json", dst)
    return dst


def copy_mirror(src: Path, dst: Path) -> Path:
    """A writable copy (the shared mirror is read-only, and copytree keeps modes)."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for path in [dst, *dst.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return dst


def _copy(rel: str, dst: Path) -> None:
    target = dst / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OLDEST_MIRROR / rel, target)


def run_file(mirror: Path, run: str) -> Path:
    return mirror / RUNS / run / "benchmark.csv.gz"


def add_run(mirror: Path, run: str, data: bytes) -> None:
    """Publish gh-pages run ``run`` with CSV ``data``, appended to ``commits.txt``."""
    target = run_file(mirror, run)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data, mtime=0))
    runs = mirror / RUNS / "commits.txt"
    runs.write_text(runs.read_text() + f"{run}\n")


def set_runs(mirror: Path, lines: list[str]) -> None:
    """Rewrite ``commits.txt`` (the list of runs, oldest first) as upstream would."""
    (mirror / RUNS / "commits.txt").write_text("".join(f"{line}\n" for line in lines))


def runs(mirror: Path) -> list[str]:
    return (mirror / RUNS / "commits.txt").read_text().split()


def commits(mirror: Path, stem: str) -> list[dict]:
    """The list-commits answer of ``benchmark/data/<stem>.csv``, newest first."""
    return json.loads((mirror / "commits" / f"{stem}.json").read_text())


def set_commits(mirror: Path, stem: str, items: list[dict]) -> None:
    (mirror / "commits" / f"{stem}.json").write_text(json.dumps(items))
