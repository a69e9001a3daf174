"""A synthetic upstream: revisions of the main-branch CSVs and nightly gh-pages runs, in the
mirror layout of ``shared/README.md``, reproducible from a seed.

Revision ``i`` is a gh-pages run or a main-branch commit, evenly interleaved by
``gh_pages_fraction``. A run writes the whole active benchmark matrix (about
``rows_per_revision`` rows) on one GPU at the current release; between runs groups join and
leave the matrix at a slow rate. A main-branch commit rewrites one upstream file whole:
appending groups, restating groups (re-benchmarked with new values) or removing one. Releases
advance now and then; a run at a release is named ``<commit>-v<version>`` as upstream does.

Each revision draws from its own seeded streams (one for what happens, one for the values), so
the first N revisions of a longer history are byte-identical to a history of N revisions: a
benchmark can add one revision to an existing mirror (``write_from``).
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path

import numpy as np

from benchmarks.synthetic import render
from benchmarks.synthetic.suite import GH_PAGES, MAIN_STEMS, Group, Suite, load_suite, next_version, pool, variant

START = datetime(2019, 1, 1)
STEP = timedelta(hours=6)  # four revisions a day keeps 10^4 revisions in the past
RELEASE_RATE = 0.06  # per revision; upstream released about every 15 runs
GROUP_JOIN_RATE = 0.05  # per run: a series joins the nightly matrix
GROUP_LEAVE_RATE = 0.03  # per run: a series leaves it
STEM_WEIGHTS = (0.8, 0.08, 0.12)  # main-branch commits per file, as upstream's history
QUIRK_RATE = 0.02  # per main commit: a trailing blank line, or no final line break
AUTHORS = ("Vaibhav Jindal", "Justin Hu", "Sangchun Ha", "xjmxyt", "Prathyusha", "Shao Tang")
VERBS = ("Add benchmark for", "Optimize", "Re-benchmark", "Fix", "Update benchmark data of")


@dataclass(frozen=True)
class Settings:
    revisions: int
    rows_per_revision: int
    seed: int = 0
    gh_pages_fraction: float = 0.9


@dataclass(frozen=True)
class Stamp:
    """When, where and at which release a group was last benchmarked, and its value stream."""

    version: str
    release: int
    gpu: str
    when: datetime
    values_seed: int


@dataclass
class Stats:
    revisions: int = 0
    runs: int = 0
    main_commits: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MAIN_STEMS, 0))
    rows: int = 0
    results: int = 0
    csv_bytes: int = 0
    gz_bytes: int = 0
    files: list[str] = field(default_factory=list)


class Matrix:
    """A cyclic sequence of group instances; a window of it is what a source currently runs.

    When the window needs more rows than the pool has, later cycles extend numeric sweeps to
    larger x values (``variant``); the cycle count keeps an instance and its repeat apart.
    """

    def __init__(self, groups: list[Group], target: int, rng: np.random.Generator) -> None:
        self.groups = [groups[i] for i in rng.permutation(len(groups))]
        numeric = sum(len(g.x_values) for g in groups if g.numeric)
        total = sum(len(g.x_values) for g in groups)
        self.cycles, capacity = 1, total
        while capacity <= 1.05 * target + 16 and numeric:
            self.cycles, capacity = self.cycles + 1, capacity + numeric
        self.target = min(target, int(capacity * 0.9))

    def instance(self, k: int) -> Group | None:
        p = len(self.groups)
        return variant(self.groups[k % p], (k // p) % self.cycles)

    def rows(self, k: int) -> int:
        g = self.instance(k)
        return len(g.x_values) if g else 0


@dataclass
class RunWindow:
    """The nightly matrix: instances ``lo <= k < hi``."""

    matrix: Matrix
    lo: int = 0
    hi: int = 0
    rows: int = 0

    def step(self, rng: np.random.Generator) -> None:
        if rng.random() < GROUP_JOIN_RATE:
            self._grow()
        if rng.random() < GROUP_LEAVE_RATE and self.hi - self.lo > 1:
            self._shrink()
        while self.rows < 0.97 * self.matrix.target:
            self._grow()
        while self.rows > 1.03 * self.matrix.target and self.hi - self.lo > 1:
            self._shrink()

    def _grow(self) -> None:
        self.rows += self.matrix.rows(self.hi)
        self.hi += 1

    def _shrink(self) -> None:
        self.rows -= self.matrix.rows(self.lo)
        self.lo += 1

    def active(self) -> list[Group]:
        found = (self.matrix.instance(k) for k in range(self.lo, self.hi))
        return sorted((g for g in found if g), key=lambda g: (g.order, g.variant))


@dataclass
class MainFile:
    """One main-branch CSV: its groups in file order, each with its last benchmark stamp."""

    matrix: Matrix
    entries: list[tuple[int, Stamp]] = field(default_factory=list)
    next_k: int = 0

    @property
    def rows(self) -> int:
        return sum(self.matrix.rows(k) for k, _ in self.entries)

    def append(self, stamp: Stamp) -> None:
        present = {k % (len(self.matrix.groups) * self.matrix.cycles) for k, _ in self.entries}
        for _ in range(len(self.matrix.groups) * self.matrix.cycles):
            k, self.next_k = self.next_k, self.next_k + 1
            if self.matrix.instance(k) and k % (len(self.matrix.groups) * self.matrix.cycles) not in present:
                self.entries.append((k, stamp))
                return

    def change(self, rng: np.random.Generator, stamp) -> None:
        """Append, restate or remove groups, at upstream's mix (most commits append)."""
        target = self.matrix.target
        if not self.entries:
            while self.rows < target // 4 or not self.entries:
                self.append(stamp(rng))
            return
        u = rng.random()
        if u < 0.6 and self.rows < 0.97 * target:
            for _ in range(int(rng.integers(1, 4))):
                self.append(stamp(rng))
        elif u < 0.93:
            for i in rng.choice(len(self.entries), size=min(len(self.entries), int(rng.integers(1, 4))), replace=False):
                self.entries[i] = (self.entries[i][0], stamp(rng))
        elif len(self.entries) > 1:
            del self.entries[int(rng.integers(len(self.entries)))]
            if rng.random() < 0.5:
                self.append(stamp(rng))


@dataclass
class Revision:
    index: int
    stem: str
    sha: str
    when: datetime
    run: str | None = None
    author: str = ""
    message: str = ""


def is_run(i: int, gh_pages_fraction: float) -> bool:
    """Main-branch commits evenly spaced: revision i is one when the running share steps up."""
    # Exact fractions: 1 - 0.9 is 0.09999999999999998 in floats, which shifts the schedule.
    share = 1 - Fraction(gh_pages_fraction).limit_denominator(1000)
    return math.floor((i + 1) * share) == math.floor(i * share)


class Generator:
    def __init__(self, settings: Settings, suite: Suite | None = None) -> None:
        self.s = settings
        self.suite = suite or load_suite()
        setup = np.random.default_rng([settings.seed, 0xC0FFEE])
        self.window = RunWindow(Matrix(pool(self.suite, GH_PAGES), settings.rows_per_revision, setup))
        self.files = {s: MainFile(Matrix(pool(self.suite, s), settings.rows_per_revision, setup)) for s in MAIN_STEMS}
        self.gpus = list(self.suite.gpus)
        weights = np.array(list(self.suite.gpus.values()), dtype=float)
        self.gpu_p = weights / weights.sum()
        self.release, self.version = 0, self.suite.versions[0]
        self.revisions: list[Revision] = []
        self.run_names: set[str] = set()
        self.golden: dict[str, str] = {}
        self.seen_main: set[tuple[str, int, Stamp]] = set()
        self.stats = Stats()

    # -- simulation ------------------------------------------------------------------------

    def _release(self, rng: np.random.Generator) -> bool:
        if rng.random() >= RELEASE_RATE:
            return False
        self.release += 1
        versions = self.suite.versions
        self.version = versions[self.release] if self.release < len(versions) else next_version(self.version)
        return True

    def _gpu(self, rng: np.random.Generator) -> str:
        return self.gpus[int(rng.choice(len(self.gpus), p=self.gpu_p))]

    def _sha(self, rng: np.random.Generator) -> str:
        while True:
            sha = rng.bytes(20).hex()
            if sha[:7] not in self.run_names:
                return sha

    def step(self, i: int) -> tuple[Revision, list[Group] | None]:
        """Advance the history by revision ``i``; a run also returns the groups it ran."""
        rng = np.random.default_rng([self.s.seed, i, 0])
        released = self._release(rng)
        when = START + i * STEP
        sha = self._sha(rng)
        author = AUTHORS[int(rng.integers(len(AUTHORS)))]
        if is_run(i, self.s.gh_pages_fraction):
            self.window.step(rng)
            run = sha[:7] + (f"-v{self.version}" if released else "")
            self.run_names.add(sha[:7])
            groups = self.window.active()
            for g in groups:
                self.golden.setdefault(g.kernel, sha[:7])
            return Revision(i, GH_PAGES, sha, when, run=run, author=author), groups
        stem = MAIN_STEMS[int(rng.choice(len(MAIN_STEMS), p=STEM_WEIGHTS))]
        main = self.files[stem]

        def stamp(r: np.random.Generator) -> Stamp:
            offset = timedelta(seconds=int(r.integers(STEP.total_seconds())))
            return Stamp(self.version, self.release, self._gpu(r), when - offset, int(r.integers(2**62)))

        main.change(rng, stamp)
        kernel = main.matrix.instance(main.entries[-1][0]).kernel
        verb = VERBS[int(rng.integers(len(VERBS)))]
        message = f"{verb} {kernel} (#{100 + i})\n\n## Summary\nBenchmark data regenerated."
        return Revision(i, stem, sha, when, author=author, message=message), None

    # -- rendering ------------------------------------------------------------------------

    def run_bytes(self, rev: Revision, groups: list[Group]) -> bytes:
        rng = np.random.default_rng([self.s.seed, rev.index, 1])
        gpu, clock, lines = self._gpu(rng), rev.when, []
        for g in groups:
            lines += render.group_lines(g, gpu, self.version, self.release, clock, rng)
            clock += timedelta(seconds=int(rng.integers(2, 40)))
        return render.file_bytes(lines)

    def main_bytes(self, rev: Revision) -> bytes:
        main, lines = self.files[rev.stem], []
        for k, st in main.entries:
            g = main.matrix.instance(k)
            rng = np.random.default_rng([self.s.seed, 2, st.values_seed])
            lines += render.group_lines(g, st.gpu, st.version, st.release, st.when, rng)
        quirk_rng = np.random.default_rng([self.s.seed, rev.index, 3])
        u = quirk_rng.random()
        quirk = "blank-line" if u < QUIRK_RATE else "no-final-eol" if u < 2 * QUIRK_RATE else None
        return render.file_bytes(lines, quirk)

    def count(self, rev: Revision, groups: list[Group] | None) -> None:
        """Rows and distinct results (one distinct row per source) without reading files back."""
        self.stats.revisions += 1
        if groups is not None:
            n = sum(len(g.x_values) for g in groups)
            self.stats.runs += 1
            self.stats.rows += n
            self.stats.results += n  # every row of a run is distinct: one point per group and x
            return
        main = self.files[rev.stem]
        self.stats.main_commits[rev.stem] += 1
        self.stats.rows += main.rows
        for k, st in main.entries:
            key = (rev.stem, k, st)
            if key not in self.seen_main:
                self.seen_main.add(key)
                self.stats.results += main.matrix.rows(k)


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` whole: a mirror extended in place may share files with its source
    through hard links (``cp -al``), which a write into the old inode would change too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_gz(path: Path, data: bytes) -> int:
    packed = gzip.compress(data, compresslevel=6, mtime=0)
    _write(path, packed)
    return len(packed)


def revision_file(rev: Revision) -> str:
    if rev.stem == GH_PAGES:
        return f"gh-pages/benchmarks/{rev.run}/benchmark.csv.gz"
    return f"raw/{rev.sha}/benchmark/data/{rev.stem}.csv.gz"


def _commit_item(rev: Revision) -> dict:
    date = rev.when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "sha": rev.sha,
        "commit": {
            "author": {"name": rev.author, "date": date},
            "committer": {"name": "GitHub", "date": date},
            "message": rev.message,
        },
        "html_url": f"https://github.com/linkedin/Liger-Kernel/commit/{rev.sha}",
    }


def _write_listings(out: Path, gen: Generator) -> None:
    for stem in MAIN_STEMS:
        commits = [_commit_item(r) for r in reversed(gen.revisions) if r.stem == stem]
        _write(out / "commits" / f"{stem}.json", json.dumps(commits, indent=1).encode())
    runs = [r.run for r in gen.revisions if r.stem == GH_PAGES]
    bench = out / "gh-pages" / "benchmarks"
    _write(bench / "commits.txt", "".join(f"{run}\n" for run in runs).encode())
    if runs:
        golden = {
            "description": "Golden reference commits for kernel performance benchmarking",
            "default_commit": runs[0][:7],
            "golden_commits": dict(sorted(gen.golden.items())),
        }
        _write(bench / "golden_commits.json", (json.dumps(golden, indent=2) + "\n").encode())


def generate(out: Path, settings: Settings, write_from: int = 0) -> Stats:
    """Write the mirror of ``settings`` to ``out``; revisions before ``write_from`` are assumed
    to be there already (from a shorter history with the same seed) and are not rewritten."""
    gen = Generator(settings)
    for i in range(settings.revisions):
        rev, groups = gen.step(i)
        gen.revisions.append(rev)
        gen.count(rev, groups)
        gen.stats.files.append(revision_file(rev))
        if i < write_from:
            continue
        data = gen.run_bytes(rev, groups) if groups is not None else gen.main_bytes(rev)
        gen.stats.csv_bytes += len(data)
        gen.stats.gz_bytes += _write_gz(out / revision_file(rev), data)
    _write_listings(out, gen)
    return gen.stats


def revisions_for(results: int, rows_per_revision: int, gh_pages_fraction: float) -> int:
    """About how many revisions hold ``results`` distinct results (runs carry nearly all)."""
    return max(1, round(results / (rows_per_revision * max(gh_pages_fraction, 0.05))))
