"""Build the next warehouse generation from the revisions it does not hold yet.

Work follows the new data: only sources (a main-branch path, a gh-pages run or an import) with
new or changed revisions get a new ``fact_result`` part; every other part is carried over from
the published generation by reference. ``GenerationBuilder`` runs the steps: ``plan.py`` says
what is pending, ``normalize_revision.py`` reads each new revision (its records through a
``RowSource``, row_source.py), ``assemble.py`` writes the generation's parts.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import polars as pl

from liger_warehouse.build.assemble import GenerationAssembler, Summary, apply_current, apply_sightings
from liger_warehouse.build.normalize_revision import RevisionNormalizer
from liger_warehouse.build.plan import PendingRevision, Plan
from liger_warehouse.build.row_source import RowSource, UpstreamCsvRows
from liger_warehouse.model.revisions import UpstreamListing
from liger_warehouse.model.tables import DIGEST_COLUMN, DIMENSIONS, INGESTED, SCHEMA_VERSION
from liger_warehouse.normalize.csvfile import FileRejected
from liger_warehouse.normalize.dimensions import Dimensions
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.generations import Generation, GenerationStore, new_generation_id
from liger_warehouse.store.raw import RawStore

log = logging.getLogger(__name__)


class SchemaOutdated(RuntimeError):
    """The published generation's digests follow an older schema version: a refresh migrates it
    first (liger_warehouse/migration/migrate.py), and nothing may build on it before."""


class GenerationBuilder:
    """Builds the next generation on the published one, or on ``base``: the migration of the
    published generation to the current schema version (liger_warehouse/migration/migrate.py), which is not
    published itself; the new generation then carries the migration and replaces the published one.

    ``rows`` reads the records of new revisions: upstream CSV files unless a source of another
    format says otherwise (the kernelindex importer)."""

    def __init__(
        self,
        gens: GenerationStore,
        raw: RawStore,
        now: datetime | None = None,
        base: Generation | None = None,
        rows: RowSource | None = None,
    ) -> None:
        self.gens = gens
        self.raw = raw
        self.now = (now or datetime.now(UTC)).replace(tzinfo=None)
        self.rows: RowSource = rows or UpstreamCsvRows()
        self.prior = base or gens.current()
        self.migration = base.summary.get("migration") if base else None
        gen = Generation(
            id=new_generation_id(),
            parent=(base.parent if base else self.prior.id) or None,
            created_at=self.now.isoformat() + "Z",
            tables={name: list(self.prior.parts(name)) for name in INGESTED},
        )
        # A migration is published even when upstream holds nothing new.
        self.assembler = GenerationAssembler(gens, self.prior, gen, changed=base is not None)
        self.summary: Summary = self.assembler.summary
        revisions = gens.read_table(self.prior, "dim_upstream_revision").to_pylist()
        self.revisions: dict[str, dict] = {r["revision_digest"]: r for r in revisions}
        known = {t: set(gens.read_table(self.prior, t, [DIGEST_COLUMN[t]]).column(0).to_pylist()) for t in DIMENSIONS}
        self.dims = Dimensions(known)
        self.normalizer = RevisionNormalizer(self.dims)

    def build(
        self,
        listing: UpstreamListing,
        contents: dict[str, str],
        withdraw: str | None = None,
        rederive: bool = False,
    ) -> Generation | None:
        """Stage the next generation, or return None when upstream holds nothing new (and
        ``rederive``, the later steps deriving its tables again, is not asked for).

        ``contents`` maps the revision digest of each fetched revision to its raw snapshot;
        ``withdraw`` names an import source none of whose revisions stays head.
        """
        if self.prior.schema_version != SCHEMA_VERSION:
            raise SchemaOutdated(
                f"the published generation {self.prior.id} holds digests of schema version "
                f"{self.prior.schema_version}, this code writes version {SCHEMA_VERSION}: "
                "run `liger-warehouse refresh` to migrate it first"
            )
        plan = Plan.of(listing, withdraw)
        pending, self.summary.deferred = plan.pending(self.revisions, contents)
        touched, self.summary.no_longer_upstream = plan.touched(self.revisions, pending)
        self._normalized, self._to_normalize = 0, sum(map(len, pending.values()))
        for source_key in sorted(touched):
            # pop, not get: a source's revisions (and their member tables) are let go once it
            # is written, so a full build holds one source at a time, not the whole history.
            self._build_source(plan, source_key, pending.pop(source_key, []))
        watchers.report("normalize", self._normalized, self._to_normalize)
        assembler = self.assembler
        assembler.write_dimensions(self.dims)
        assembler.write_revisions(self.revisions, plan.heads(self.revisions), plan.listed)
        assembler.write_golden(listing.golden_commits)
        self.summary.warnings += listing.problems
        self.summary.warnings += [f"GPU {g!r} is not in the GPU catalog" for g in sorted(self.dims.unknown_gpus)]
        if not (assembler.changed or rederive):
            return None
        assembler.gen.summary = assembler.summary_dict(self.migration, withdraw, rederive)
        failpoint("staging")
        self.gens.stage(assembler.gen)
        return assembler.gen

    def _build_source(self, plan: Plan, source_key: str, pending: list[PendingRevision]) -> None:
        prior = self.assembler.prior_results(source_key)
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
        current = self.assembler.head_members(head, ingested) if head else pl.Series([], dtype=pl.String)
        self.assembler.write_results(source_key, prior, apply_current(results, current))

    def _normalize_revision(self, rev: PendingRevision, known: set[str], new_rows: list[pl.DataFrame]) -> None:
        data = self.raw.get(rev.content)
        try:
            new, revision_row = self.normalizer.revision(self.rows, rev, data, known, self.now)
        except FileRejected as exc:
            self.summary.rejected.append(str(exc))
            log.error("%s", exc)
            return
        new_rows.append(new)
        self.assembler.write_revision(rev)
        self.revisions[rev.digest] = revision_row
