"""Ingest the revisions the lake does not hold yet, inside the publishing transaction.

Work follows the new data: only sources (a main-branch path, a gh-pages run or an import) with
new or changed revisions get their ``fact_result`` rows rewritten. ``Ingest`` runs the steps:
``plan.py`` says what is pending, ``normalize_revision.py`` reads each new revision (its records
through a ``RowSource``, row_source.py), ``assemble.py`` writes the rows. The compares of
consecutive gh-pages runs the lake lacks come in beside them, from the raw store (compare_rows.py).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import duckdb
import polars as pl

from liger_warehouse.build.assemble import LakeWriter, Summary, apply_current, apply_sightings
from liger_warehouse.build.compare_rows import read_compares
from liger_warehouse.build.normalize_revision import RevisionNormalizer
from liger_warehouse.build.plan import PendingRevision, Plan
from liger_warehouse.build.row_source import RowSource, UpstreamCsvRows
from liger_warehouse.model.revisions import UpstreamListing
from liger_warehouse.model.tables import DIGEST_COLUMN, DIMENSIONS
from liger_warehouse.normalize.csvfile import FileRejected
from liger_warehouse.normalize.dimensions import Dimensions
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.raw import RawStore
from liger_warehouse.upstream.compare import consecutive_runs

log = logging.getLogger(__name__)


class Ingest:
    """Writes new revisions into the lake tables of ``con``. ``rows`` reads the records of new
    revisions: upstream CSV files unless a source of another format says otherwise (the
    kernelindex importer)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, raw: RawStore, now: datetime | None = None, rows: RowSource | None = None
    ) -> None:
        self.raw = raw
        self.now = (now or datetime.now(UTC)).replace(tzinfo=None)
        self.rows: RowSource = rows or UpstreamCsvRows()
        self.writer = LakeWriter(con)
        self.summary: Summary = self.writer.summary
        revisions = self.writer.read("select * from dim_upstream_revision", "dim_upstream_revision").to_pylist()
        self.revisions: dict[str, dict] = {r["revision_digest"]: r for r in revisions}
        self.new_revisions: list[str] = []  # the digests of the revisions this run normalized
        known = {t: {d for (d,) in con.execute(f"select {DIGEST_COLUMN[t]} from {t}").fetchall()} for t in DIMENSIONS}
        self.dims = Dimensions(known)
        self.normalizer = RevisionNormalizer(self.dims)

    def run(self, listing: UpstreamListing, contents: dict[str, str], withdraw: str | None = None) -> bool:
        """Write what ``listing`` holds that the lake does not; whether anything changed.

        ``contents`` maps the revision digest of each fetched revision to its raw snapshot;
        ``withdraw`` names an import source none of whose revisions stays head.
        """
        plan = Plan.of(listing, withdraw)
        pending, self.summary.deferred = plan.pending(self.revisions, contents)
        touched, self.summary.no_longer_upstream = plan.touched(self.revisions, pending)
        self._normalized, self._to_normalize = 0, sum(map(len, pending.values()))
        for source_key in sorted(touched):
            # pop, not get: a source's revisions (and their member tables) are let go once it
            # is written, so a full build holds one source at a time, not the whole history.
            self._ingest_source(plan, source_key, pending.pop(source_key, []))
        watchers.report("normalize", self._normalized, self._to_normalize)
        writer = self.writer
        writer.write_revisions(self.revisions, plan.heads(self.revisions), plan.listed)
        writer.write_dimensions(self.dims)
        writer.write_golden(listing.golden_commits)
        compares, unreadable = read_compares(self.raw, consecutive_runs(listing), writer.held_compares())
        writer.write_compares(compares)
        self.summary.warnings += listing.problems + unreadable
        self.summary.warnings += [f"GPU {g!r} is not in the GPU catalog" for g in sorted(self.dims.unknown_gpus)]
        failpoint("staging")
        return writer.changed

    def _ingest_source(self, plan: Plan, source_key: str, pending: list[PendingRevision]) -> None:
        prior = self.writer.prior_results(source_key)
        known = set(prior["result_digest"].to_list())
        new_rows: list[pl.DataFrame] = []
        for rev in pending:
            watchers.report("normalize", self._normalized, self._to_normalize, rev.ref.label)
            self._normalize_revision(rev, known, new_rows)
            self._normalized += 1
            failpoint("normalized")
        ingested = [r for r in pending if r.digest in self.revisions]
        results = pl.concat([prior, *new_rows]) if new_rows else prior
        results = apply_sightings(results, ingested, self.revisions)
        head = plan.head(self.revisions, source_key)
        current = self.writer.head_members(head, ingested) if head else pl.Series([], dtype=pl.String)
        self.writer.write_results(source_key, prior, apply_current(results, current))

    def _normalize_revision(self, rev: PendingRevision, known: set[str], new_rows: list[pl.DataFrame]) -> None:
        data = self.raw.get(rev.content)
        try:
            new, revision_row = self.normalizer.revision(self.rows, rev, data, known, self.now)
        except FileRejected as exc:
            self.summary.rejected.append(str(exc))
            log.error("%s", exc)
            return
        new_rows.append(new)
        self.revisions[rev.digest] = revision_row
        self.new_revisions.append(rev.digest)
        self.writer.write_revision(rev)
