"""Download the upstream revisions the warehouse has not stored yet.

Content already in the raw store (from an earlier refresh that died before publishing) is
reused. A revision that fails to download is deferred to the next refresh; the rest go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from liger_warehouse.model.revisions import RevisionRef, UpstreamListing, revision_digest
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.raw import RawStore, SnapshotTooLarge
from liger_warehouse.upstream.http import UpstreamError
from liger_warehouse.upstream.sources import Upstream

log = logging.getLogger(__name__)


@dataclass
class FetchResult:
    contents: dict[str, str] = field(default_factory=dict)
    downloaded: list[str] = field(default_factory=list)
    reused: int = 0
    failures: list[str] = field(default_factory=list)


def fetch_revisions(
    upstream: Upstream,
    raw: RawStore,
    listing: UpstreamListing,
    known: set[str],
    progress: Callable[[RevisionRef], None] | None = None,
) -> FetchResult:
    """Make sure every listed revision not in ``known`` has a raw snapshot."""
    result = FetchResult()
    wanted = [(ref, revision_digest(ref)) for ref in listing.revisions]
    wanted = [(ref, rev) for ref, rev in wanted if rev not in known]
    for done, (ref, rev) in enumerate(wanted):
        watchers.report("download", done, len(wanted), ref.label)
        stored = raw.lookup(ref)
        if stored is not None:
            result.contents[rev] = stored
            result.reused += 1
            continue
        try:
            data = upstream.fetch(ref)
            failpoint("fetched")
            result.contents[rev] = raw.put(ref, data)
            result.downloaded.append(ref.label)
        except (UpstreamError, SnapshotTooLarge) as exc:
            result.failures.append(str(exc))
            log.error("deferred to the next refresh: %s", exc)
        if progress:
            progress(ref)
    watchers.report("download", len(wanted), len(wanted))
    return result
