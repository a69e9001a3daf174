"""What one build works on: which revisions of which sources are new, which sources must be
written again, and which revision is each source's head.

Pure bookkeeping over the revision rows the warehouse holds (``dim_upstream_revision``, by
revision digest) and what upstream lists; nothing here reads or writes a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from liger_warehouse.model.revisions import GH_PAGES, IMPORT, RevisionRef, UpstreamListing, revision_digest
from liger_warehouse.model.tables import SCHEMAS


@dataclass
class PendingRevision:
    """One new revision, filled in while it is normalized."""

    ref: RevisionRef
    digest: str
    content: str  # the digest of its raw snapshot
    members: pa.Table = field(default_factory=lambda: SCHEMAS["fact_revision_member"].empty_table())
    quarantined: list[dict] = field(default_factory=list)
    new_results: int = 0


@dataclass(frozen=True)
class Plan:
    """The revisions upstream lists, by revision digest, and the import source being withdrawn
    (whose revisions stop being head), if any."""

    listed: dict[str, RevisionRef]
    withdrawn: str | None = None

    @classmethod
    def of(cls, listing: UpstreamListing, withdrawn: str | None = None) -> Plan:
        return cls({revision_digest(ref): ref for ref in listing.revisions}, withdrawn)

    def pending(
        self, held: dict[str, dict], contents: dict[str, str]
    ) -> tuple[dict[str, list[PendingRevision]], list[str]]:
        """The listed revisions not ``held``, by source key and oldest first, and the labels of
        those deferred because ``contents`` (revision digest to raw snapshot) lacks them."""
        pending: dict[str, list[PendingRevision]] = {}
        deferred: list[str] = []
        for rev_digest, ref in self.listed.items():
            if rev_digest in held:
                continue
            if rev_digest not in contents:
                deferred.append(ref.label)
                continue
            pending.setdefault(ref.source_key, []).append(PendingRevision(ref, rev_digest, contents[rev_digest]))
        for revs in pending.values():
            revs.sort(key=lambda r: r.ref.seq)
        return pending, deferred

    def touched(self, held: dict[str, dict], pending: dict[str, list[PendingRevision]]) -> tuple[set[str], list[str]]:
        """Sources with new revisions, whose revisions left or rejoined upstream, or being
        withdrawn; and what left upstream (a path, or a gh-pages run)."""
        touched = set(pending) | ({self.withdrawn} if self.withdrawn else set())
        gone: list[str] = []
        for rev_digest, row in held.items():
            if row["is_upstream"] != (rev_digest in self.listed):
                touched.add(row["source_key"])
                if rev_digest not in self.listed:
                    gone.append(row["path"] if row["source"] != GH_PAGES else row["run"])
        return touched, gone

    def head(self, held: dict[str, dict], source_key: str) -> str | None:
        """The newest revision of ``source_key`` that upstream lists or that stays head."""
        candidates = [
            (r["seq"], d)
            for d, r in held.items()
            if r["source_key"] == source_key and (d in self.listed or self._stays_head(r))
        ]
        return max(candidates)[1] if candidates else None

    def heads(self, held: dict[str, dict]) -> set[str]:
        """The head revision of every source."""
        heads = {self.head(held, key) for key in {r["source_key"] for r in held.values()}}
        return {h for h in heads if h is not None}

    def _stays_head(self, row: dict) -> bool:
        """Whether a revision that is not listed stays its source's head: an import, which
        upstream never lists, until a newer import of it or its withdrawal."""
        return row["source"] == IMPORT and row["is_head"] and row["source_key"] != self.withdrawn
