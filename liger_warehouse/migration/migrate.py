"""Migrate a warehouse whose digests follow an older schema version (docs/SCHEMA.md).

Every generation records the schema version of the identities behind its digests. When the
published one is older than ``SCHEMA_VERSION``, the next refresh calls ``migrate`` before it
ingests anything: every revision the generation holds is normalized again from its immutable raw
snapshot, by the very code a refresh (or, for an imported file, an import) uses, so every result
gets the digests of today's identities. Nothing is downloaded.

What a result is does not change: its digest (source and row text), values, first and last
revision and whether it is current stay as published, and a re-derived value that disagrees
stops the migration. So ``fact_revision_member``, ``quarantined_row``, ``dim_upstream_revision``
and ``golden_commit`` carry over by reference; each source's ``fact_result`` part is rewritten
with the new digests, the dimensions are written anew with exactly the rows the results
reference, and ``digest_migration`` maps every digest that changed to what it became.

The migration is not published by itself: the refresh builds on it (``GenerationBuilder(...,
base=...)``) and publishes the two as one generation through its usual audit. The published
generation and its parts stay as they are.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl
import pyarrow as pa

from liger_warehouse.audit import checks
from liger_warehouse.build.assemble import fact_part_name
from liger_warehouse.build.normalize_revision import RevisionNormalizer
from liger_warehouse.build.row_source import RowSource, UpstreamCsvRows
from liger_warehouse.imports.kernelindex import Claims, KernelindexRows
from liger_warehouse.model.revisions import GH_PAGES, IMPORT, RevisionRef
from liger_warehouse.model.tables import DIMENSIONS, INGESTED, SCHEMA_VERSION, SCHEMAS
from liger_warehouse.normalize.columnar import FACT
from liger_warehouse.normalize.csvfile import FileRejected
from liger_warehouse.normalize.dimensions import Dimensions, path_stem
from liger_warehouse.normalize.rows import BACKEND_BY_STEM, named_backend
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.store.generations import Generation, GenerationStore, new_generation_id
from liger_warehouse.store.raw import RawStore

# The digests a result references; each kind of digest_migration is one of them minus "_digest".
DIGESTS = ("protocol_digest", "workload_digest", "environment_digest", "implementation_digest", "series_digest")
# What a result says, re-derived from its row: a migration that reads it differently stops.
VALUES = ("source", "source_key", "metric", "unit", "p20", "p50", "p80", "observed_at", "liger_version", "row_text")


class MigrationFailed(RuntimeError):
    """A held revision could not be read again as it was ingested; nothing was published."""


@dataclass
class _Moves:
    """What the migration changed, gathered source by source."""

    results: int = 0
    relabelled: int = 0
    pairs: list[pl.DataFrame] = field(default_factory=list)

    def table(self) -> pl.DataFrame:
        """Every old digest that changed for some result, with each digest it became (itself
        too, when other results kept it)."""
        pairs = (
            pl.concat(self.pairs).unique()
            if self.pairs
            else pl.DataFrame(schema={"kind": pl.String, "old_digest": pl.String, "new_digest": pl.String})
        )
        changed = pairs.filter(pl.col("old_digest") != pl.col("new_digest")).select("kind", "old_digest").unique()
        return (
            pairs.join(changed, on=["kind", "old_digest"], how="semi")
            .with_columns(schema_version=pl.lit(SCHEMA_VERSION, dtype=pl.Int32))
            .sort("kind", "old_digest", "new_digest")
        )

    def summary(self, table: pl.DataFrame, from_version: int) -> dict:
        changed = table.filter(pl.col("old_digest") != pl.col("new_digest"))
        return {
            "from_schema_version": from_version,
            "schema_version": SCHEMA_VERSION,
            "results": self.results,
            "results_relabelled": self.relabelled,
            "digests_changed": {
                kind: changed.filter(pl.col("kind") == kind)["old_digest"].n_unique()
                for kind in (d.removesuffix("_digest") for d in DIGESTS)
            },
        }


def migrate(gens: GenerationStore, raw: RawStore, now: datetime | None = None) -> Generation | None:
    """The published generation with the digests of ``SCHEMA_VERSION`` (parts written, manifest
    neither staged nor published), or None when it already has them."""
    published = gens.current()
    if published.schema_version >= SCHEMA_VERSION:
        return None
    now = (now or datetime.now(UTC)).replace(tzinfo=None)
    gen = Generation(
        id=new_generation_id(),
        parent=published.id,
        created_at=now.isoformat() + "Z",
        tables={name: list(published.parts(name)) for name in INGESTED},
    )
    readers = _Readers(gens, raw, published, now)
    revisions = _revisions_by_source(gens, published)
    moves = _Moves()
    parts = published.parts("fact_result")
    for done, part in enumerate(parts):
        watchers.report("migrate", done, len(parts), part.key)
        old = pl.from_arrow(gens.read_parts("fact_result", [part]))
        fresh = _normalized_again(readers, revisions.get(part.key, []))
        new = _relabelled(old, fresh, part.key, moves)
        written = gens.write_part("fact_result", part.key, fact_part_name(part.key, gen.id), new.to_arrow())
        gen.tables["fact_result"] = [p for p in gen.tables["fact_result"] if p.key != part.key] + [written]
    watchers.report("migrate", len(parts), len(parts))
    for table in DIMENSIONS:
        rows = pa.Table.from_pylist(list(readers.dims.new[table].values()), schema=SCHEMAS[table])
        gen.tables[table] = [gens.write_part(table, gen.id, gen.id, rows)]
    table = moves.table()
    gen.tables["digest_migration"] = [
        *published.parts("digest_migration"),
        gens.write_part("digest_migration", gen.id, gen.id, table.to_arrow()),
    ]
    gen.summary = {"migration": moves.summary(table, published.schema_version)}
    return gen


class _Readers:
    """How each source's revisions are read again, all collecting into one fresh ``Dimensions``
    (so every dimension row the results reference is written anew)."""

    def __init__(self, gens: GenerationStore, raw: RawStore, published: Generation, now: datetime) -> None:
        self.gens, self.raw, self.published, self.now = gens, raw, published, now
        self.dims = Dimensions({table: set() for table in DIMENSIONS})
        self.normalizer = RevisionNormalizer(self.dims)
        self._by_source: dict[bool, RowSource] = {}

    def rows(self, source: str) -> RowSource:
        """The upstream CSV reader, or the importer's, whose records' digest claims are checked
        against the published generation by what its schema version said."""
        is_import = source == IMPORT
        if is_import not in self._by_source:
            self._by_source[is_import] = (
                KernelindexRows(SchemaOneClaims.load(self.gens, self.published)) if is_import else UpstreamCsvRows()
            )
        return self._by_source[is_import]


STEM_BY_BACKEND = {backend: stem for stem, backend in BACKEND_BY_STEM.items()}


@dataclass
class SchemaOneClaims(Claims):
    """Which upstream file an imported record came from, by the digests of schema version 1.

    Its protocol digests did not tell the files apart; the backend of the claimed implementation
    did, except for a provider that names its backend (``liger_triton`` ran in the cuTile and the
    CuTe DSL file alike). Such a record follows the file of the held upstream result it is a
    copy of (the same four digests, time and median) when that is one file."""

    origins: dict[tuple, set[str | None]] = field(default_factory=dict)

    @classmethod
    def load(cls, gens: GenerationStore, gen: Generation) -> SchemaOneClaims:
        claims = super().load(gens, gen)
        named = [d for d, row in claims.implementations.items() if named_backend(row["provider"])]
        if named:
            claims.origins = _origins(gens, gen, named)
        return claims

    def stem(self, fields: dict[str, Any]) -> str | None:
        claimed = self.implementations.get(fields["implementation_digest"])
        if claimed is None or (claimed["provider"], claimed["liger_version"]) != (
            fields["provider"],
            fields["liger_version"],
        ):
            return None
        if not named_backend(claimed["provider"]):
            return STEM_BY_BACKEND.get(claimed["backend"])
        stems = self.origins.get(tuple(fields[k] for k in ORIGIN), set())
        return next(iter(stems)) if len(stems) == 1 else None


# What tells an upstream result apart in a record that copies it.
ORIGIN = ("protocol_digest", "workload_digest", "environment_digest", "implementation_digest", "observed_at", "p50")


def _origins(gens: GenerationStore, gen: Generation, implementations: list[str]) -> dict[tuple, set[str | None]]:
    """The upstream files (stems; None for gh-pages) of the results of ``implementations``."""
    con = checks.connect(gens, gen)
    try:
        rows = con.execute(
            f"select {', '.join(ORIGIN)}, source, source_key from fact_result "
            "where source != ? and implementation_digest in (select unnest(?::varchar[]))",
            [IMPORT, implementations],
        ).fetchall()
    finally:
        con.close()
    origins: dict[tuple, set[str | None]] = defaultdict(set)
    for *key, source, source_key in rows:
        origins[tuple(key)].add(path_stem(source_key) if source != GH_PAGES else None)
    return origins


def _revisions_by_source(gens: GenerationStore, gen: Generation) -> dict[str, list[dict]]:
    by_source: dict[str, list[dict]] = defaultdict(list)
    for row in gens.read_table(gen, "dim_upstream_revision").to_pylist():
        by_source[row["source_key"]].append(row)
    return {key: sorted(rows, key=lambda r: r["seq"]) for key, rows in by_source.items()}


def _ref(row: dict) -> RevisionRef:
    return RevisionRef(source=row["source"], path=row["path"], commit=row["commit"], run=row["run"], seq=row["seq"])


def _normalized_again(readers: _Readers, revisions: list[dict]) -> pl.DataFrame:
    """The fact rows of every distinct record of a source's revisions, oldest revision first."""
    known: set[str] = set()
    frames = []
    for row in revisions:
        ref = _ref(row)
        rows = readers.rows(ref.source)
        # Validated as at ingest: a row quarantined then for a timestamp in the future stays so.
        now = row["ingested_at"] or readers.now
        try:
            data = readers.raw.get(row["content_digest"])
            _, out = readers.normalizer.normalized(rows, ref, row["revision_digest"], data, known, now)
        except (FileRejected, FileNotFoundError) as exc:
            raise MigrationFailed(f"{ref.label}: cannot be read again from the raw store: {exc}") from None
        if len(out.rejected) != row["quarantined_count"]:
            raise MigrationFailed(
                f"{ref.label}: {len(out.rejected)} rows rejected now, {row['quarantined_count']} were quarantined"
            )
        frames.append(out.new)
    return pl.concat(frames) if frames else pl.DataFrame(schema=FACT)


def _relabelled(old: pl.DataFrame, fresh: pl.DataFrame, source_key: str, moves: _Moves) -> pl.DataFrame:
    """``old`` (one source's results) with the digests of ``fresh``, its rows read again."""
    if fresh.height != old.height or fresh["result_digest"].n_unique() != fresh.height:
        raise MigrationFailed(f"{source_key}: {old.height} results held, {fresh.height} read again")
    renamed = fresh.select("result_digest", *(pl.col(c).alias(f"new_{c}") for c in (*DIGESTS, *VALUES)))
    joined = old.join(renamed, on="result_digest", how="left", maintain_order="left")
    lost = joined.filter(pl.col("new_series_digest").is_null())["result_digest"].to_list()
    if lost:
        raise MigrationFailed(f"{source_key}: {len(lost)} results are in no held revision, e.g. {lost[0]}")
    differs = pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"new_{c}")) for c in VALUES)
    if bad := joined.filter(differs)["result_digest"].to_list():
        raise MigrationFailed(f"{source_key}: {len(bad)} results read differently now, e.g. {bad[0]}")
    moves.results += old.height
    moves.relabelled += joined.filter(pl.any_horizontal(pl.col(c) != pl.col(f"new_{c}") for c in DIGESTS)).height
    moves.pairs += [
        joined.select(
            kind=pl.lit(c.removesuffix("_digest")), old_digest=pl.col(c), new_digest=pl.col(f"new_{c}")
        ).unique()
        for c in DIGESTS
    ]
    return joined.with_columns(pl.col(f"new_{c}").alias(c) for c in DIGESTS).select(old.columns)
