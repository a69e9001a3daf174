"""What code lies between consecutive gh-pages runs: GitHub's compare of each run's commit with the
previous run's, fetched once and kept in the raw store for good, since a compare of two commits
never changes.

A compare is optional evidence (the suspects of a verdict): one that cannot be had (a mirror
without ``compare/``, a 404, a network fault) is logged and tried again by a later refresh, and
never fails the refresh. A refresh asks for at most ``budget`` of them, newest first, because each
is a rate-limited REST call where the CSVs come from the raw-content host.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from itertools import pairwise

from liger_warehouse.model.revisions import GH_PAGES, UpstreamListing
from liger_warehouse.model.versions import split_run_name
from liger_warehouse.store.raw import RawStore
from liger_warehouse.upstream.http import UpstreamError
from liger_warehouse.upstream.sources import Upstream

log = logging.getLogger(__name__)

# Compares one refresh asks for: a nightly needs one; a first build catches up over a few nights
# rather than spending an unauthenticated client's whole hourly REST budget (60) at once.
COMPARES_PER_REFRESH = 40


@dataclass(frozen=True)
class RunPair:
    """Two consecutive gh-pages runs in upload order, by the commits they benchmarked."""

    base: str
    head: str

    @property
    def key(self) -> str:
        """GitHub's name of the range, ``<base>...<head>``."""
        return f"{self.base}...{self.head}"


@dataclass
class CompareFetch:
    stored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def run_pair(base_run: str, head_run: str) -> RunPair:
    """The pair of commits two gh-pages runs benchmarked (a release run by its commit)."""
    return RunPair(split_run_name(base_run)[0], split_run_name(head_run)[0])


def consecutive_runs(listing: UpstreamListing) -> list[tuple[str, str]]:
    """Each gh-pages run's name with the name of the run uploaded before it, oldest first."""
    runs = sorted((r for r in listing.revisions if r.source == GH_PAGES), key=lambda r: r.seq)
    return [(base.run or base.commit, head.run or head.commit) for base, head in pairwise(runs)]


def run_pairs(listing: UpstreamListing) -> list[RunPair]:
    """Each gh-pages run with the run uploaded before it, oldest first, by their commits."""
    return [run_pair(base, head) for base, head in consecutive_runs(listing)]


def check_compare(body: bytes, what: str) -> bytes:
    """``body`` when it has the shape of GitHub's compare answer; else an error naming ``what``."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise UpstreamError(f"{what}: not JSON ({exc})") from None
    shaped = (
        isinstance(data, dict)
        and isinstance(data.get("status"), str)
        and isinstance(data.get("commits"), list)
        and isinstance(data.get("files", []), list)
    )
    if not shaped:
        raise UpstreamError(f"{what}: not a compare of two commits (status, commits and files expected)")
    return body


def fetch_compares(upstream: Upstream, raw: RawStore, pairs: list[RunPair], budget: int) -> CompareFetch:
    """Store the compare of every pair the raw store lacks, newest first, at most ``budget`` asks.

    The first failure ends the round: upstream is unwell or the rate limit is spent, and the
    rest wait for the next refresh."""
    result = CompareFetch()
    wanted = [pair for pair in reversed(pairs) if not raw.has_compare(pair.key)][:budget]
    for pair in wanted:
        try:
            body = upstream.compare(pair.base, pair.head)
            if body is None:
                result.missing.append(pair.key)
                continue
            raw.put_compare(pair.key, check_compare(body, f"compare {pair.key}"))
            result.stored.append(pair.key)
        except UpstreamError as exc:
            result.failures.append(str(exc))
            log.warning("compare %s deferred to the next refresh: %s", pair.key, exc)
            break
    return result
