"""Upstream readers: GitHub (REST API plus raw-content host) and a local mirror directory.

Both yield the same ``UpstreamListing`` and the same file bytes, so everything after this
module is unaware of where the data came from.
"""

from __future__ import annotations

import json
import logging
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlsplit

from liger_warehouse.model.revisions import GH_PAGES, MAIN, RevisionRef, UpstreamListing
from liger_warehouse.model.versions import is_valid_run_name
from liger_warehouse.store.raw import bounded_gunzip
from liger_warehouse.upstream.http import HttpClient, UpstreamError

log = logging.getLogger(__name__)

GITHUB_PREFIX = "github:"
RUNS_PATH = "benchmarks/commits.txt"
GOLDEN_PATH = "benchmarks/golden_commits.json"
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


class Upstream(Protocol):
    def list(self) -> UpstreamListing: ...

    def fetch(self, ref: RevisionRef) -> bytes: ...

    def compare(self, base: str, head: str) -> bytes | None: ...

    def describe(self) -> str: ...


def run_path(run: str) -> str:
    return f"benchmarks/{run}/benchmark.csv"


def check_path(path: str) -> str:
    """Refuse paths that could escape a directory before they touch a filesystem or URL."""
    if not _SAFE_PATH.match(path) or any(part in ("", ".", "..") for part in path.split("/")):
        raise UpstreamError(f"refusing unsafe upstream path {path!r}")
    return path


def check_commit(commit: str) -> str:
    """Refuse anything but a hex commit before it goes into a URL or a file name."""
    if not _COMMIT.fullmatch(commit):
        raise UpstreamError(f"refusing {commit!r}: not a hex commit")
    return commit


def _parse_runs(text: str, problems: list[str]) -> list[RevisionRef]:
    refs = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        run = line.strip()
        if not run:
            continue
        if not is_valid_run_name(run):
            problems.append(f"{RUNS_PATH} line {lineno}: invalid run name {run!r} skipped")
            continue
        refs.append(RevisionRef(source=GH_PAGES, path=run_path(run), commit=run, run=run, seq=len(refs) + 1))
    return refs


def _text(body: bytes) -> str:
    # A non-UTF-8 byte spoils its line only: that line fails the run-name check and is skipped.
    return body.decode("utf-8", errors="replace")


def _golden(body: bytes | None, problems: list[str]) -> bytes | None:
    """``body`` when it is a golden-commits object; else None (the last one is kept) and why."""
    if body is None:
        return None
    try:
        data = json.loads(body)
        runs = data.get("golden_commits") or {}
        valid = isinstance(runs, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in runs.items())
    except (ValueError, AttributeError):
        valid = False
    if not valid:
        problems.append(f"{GOLDEN_PATH}: not a golden-commits object; the last one is kept")
        return None
    return body


def _same_origin(url: str | None, base: str, path: str) -> str | None:
    """``url`` if it is on the API's own host: the token goes with every request, so a page
    that links elsewhere must not lead the client (and the token) off to another host."""
    if url is None or urlsplit(url)[:2] == urlsplit(base)[:2]:
        return url
    raise UpstreamError(f"list of commits for {path}: refusing a next page on another host: {url}")


def _commit_refs(path: str, commits: list[dict]) -> list[RevisionRef]:
    """GitHub lists newest first; the warehouse numbers revisions oldest first."""
    refs = []
    for seq, item in enumerate(reversed(commits), start=1):
        sha = item["sha"]
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise UpstreamError(f"list of commits for {path}: invalid sha {sha!r}")
        commit = item.get("commit") or {}
        when = (commit.get("committer") or {}).get("date") or (commit.get("author") or {}).get("date")
        message = (commit.get("message") or "").split("\n", 1)[0]
        refs.append(
            RevisionRef(
                MAIN,
                path,
                sha,
                seq=seq,
                committed_at=when,
                message=message,
                html_url=item.get("html_url"),
            )
        )
    return refs


@dataclass
class GitHubUpstream:
    repo: str
    api_base: str
    raw_base: str
    http: HttpClient
    paths: tuple[str, ...]
    per_page: int = 100

    def describe(self) -> str:
        return f"github:{self.repo}"

    def list(self) -> UpstreamListing:
        listing = UpstreamListing()
        for path in self.paths:
            listing.revisions += _commit_refs(check_path(path), self._list_commits(path))
        runs = self.http.get(self._raw(GH_PAGES, RUNS_PATH), what=RUNS_PATH, conditional=True)
        if runs is not None:
            listing.revisions += _parse_runs(_text(runs.body), listing.problems)
        golden = self.http.get(self._raw(GH_PAGES, GOLDEN_PATH), what=GOLDEN_PATH, conditional=True)
        listing.golden_commits = _golden(golden.body if golden else None, listing.problems)
        listing.requests, listing.bytes_downloaded = self.http.requests, self.http.bytes_downloaded
        return listing

    def _list_commits(self, path: str) -> list[dict]:
        url: str | None = (
            f"{self.api_base.rstrip('/')}/repos/{self.repo}/commits?path={quote(path)}&per_page={self.per_page}"
        )
        commits: list[dict] = []
        while url:
            page = self.http.get(
                url,
                what=f"list of commits for {path}",
                conditional=True,
                accept="application/vnd.github+json",
            )
            if page is None:
                raise UpstreamError(f"list of commits for {path}: {url} answered 404")
            try:
                commits += json.loads(page.body)
            except ValueError as exc:
                raise UpstreamError(f"list of commits for {path}: {url} is not JSON ({exc})") from None
            url = _same_origin(page.next_url, self.api_base, path)
        return commits

    def _raw(self, ref: str, path: str) -> str:
        return f"{self.raw_base.rstrip('/')}/{self.repo}/{ref}/{quote(check_path(path))}"

    def fetch(self, ref: RevisionRef) -> bytes:
        at = GH_PAGES if ref.source == GH_PAGES else ref.commit
        got = self.http.get(self._raw(at, ref.path), what=ref.label)
        if got is None:
            raise UpstreamError(f"{ref.label}: {self._raw(at, ref.path)} answered 404")
        return got.body

    def compare(self, base: str, head: str) -> bytes | None:
        """GitHub's compare of two commits (its first page: the nightly ranges are short); None
        when GitHub knows no such range."""
        pair = f"{check_commit(base)}...{check_commit(head)}"
        url = f"{self.api_base.rstrip('/')}/repos/{self.repo}/compare/{pair}?per_page=100"
        got = self.http.get(url, what=f"compare {pair}", accept="application/vnd.github+json")
        return got.body if got else None


@dataclass
class MirrorUpstream:
    """A local directory in the mirror layout (files gzipped, commit lists as JSON)."""

    root: Path
    paths: tuple[str, ...]
    max_bytes: int = 256 * 1024 * 1024

    def describe(self) -> str:
        return str(self.root)

    def _read_gz(self, rel: str, what: str) -> bytes | None:
        path = self.root / rel
        if not path.is_file():
            return None
        try:
            return bounded_gunzip(path.read_bytes(), self.max_bytes, f"{what}: {path}")
        except (OSError, EOFError, zlib.error) as exc:
            raise UpstreamError(f"{what}: {path} is not a whole gzip file ({exc})") from None

    def list(self) -> UpstreamListing:
        listing = UpstreamListing()
        for path in self.paths:
            stem = Path(check_path(path)).stem
            commits_file = self.root / "commits" / f"{stem}.json"
            commits = json.loads(commits_file.read_text()) if commits_file.is_file() else []
            listing.revisions += _commit_refs(path, commits)
        runs_file = self.root / "gh-pages" / RUNS_PATH
        if runs_file.is_file():
            listing.revisions += _parse_runs(_text(runs_file.read_bytes()), listing.problems)
        golden = self.root / "gh-pages" / GOLDEN_PATH
        listing.golden_commits = _golden(golden.read_bytes() if golden.is_file() else None, listing.problems)
        return listing

    def fetch(self, ref: RevisionRef) -> bytes:
        rel = f"gh-pages/{ref.path}.gz" if ref.source == GH_PAGES else f"raw/{ref.commit}/{ref.path}.gz"
        data = self._read_gz(check_path(rel), ref.label)
        if data is None:
            raise UpstreamError(f"{ref.label}: the mirror has no file {self.root / rel}")
        return data

    def compare(self, base: str, head: str) -> bytes | None:
        path = self.root / "compare" / f"{check_commit(base)}...{check_commit(head)}.json"
        return path.read_bytes() if path.is_file() else None
