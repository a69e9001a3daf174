"""Build the next warehouse generation from the upstream revisions it does not hold yet.

Work follows the new data: only sources (a main-branch path or a gh-pages run) with new or
changed revisions get a new ``fact_result`` part; every other part is carried over from the
published generation by reference.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl
import pyarrow as pa

from liger_warehouse.model.digests import content_digest, hex_part
from liger_warehouse.model.revisions import GH_PAGES, IMPORT, RevisionRef, UpstreamListing, revision_digest
from liger_warehouse.model.tables import DIGEST_COLUMN, DIMENSIONS, INGESTED, SCHEMA_VERSION, SCHEMAS
from liger_warehouse.model.versions import parse_version, split_run_name
from liger_warehouse.normalize import columnar
from liger_warehouse.normalize.csvfile import CsvFile, FileRejected, Record, split_csv
from liger_warehouse.normalize.dimensions import Dimensions, path_stem
from liger_warehouse.normalize.rows import Row, parse_row
from liger_warehouse.runtime import progress as watchers
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.generations import Generation, GenerationStore, Part, new_generation_id
from liger_warehouse.store.raw import RawStore

log = logging.getLogger(__name__)


class SchemaOutdated(RuntimeError):
    """The published generation's digests follow an older schema version: a refresh migrates it
    first (liger_warehouse/migration/migrate.py), and nothing may build on it before."""


@dataclass
class Summary:
    """What one refresh did, for metadata, logs and the CLI."""

    revisions: list[dict] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    added: int = 0
    restated: int = 0
    removed: int = 0
    no_longer_upstream: list[str] = field(default_factory=list)


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


@dataclass
class _Revision:
    """One new revision while it is being normalized."""

    ref: RevisionRef
    digest: str
    content: str
    members: pa.Table = field(default_factory=lambda: SCHEMAS["fact_revision_member"].empty_table())
    quarantined: list[dict] = field(default_factory=list)
    new_results: int = 0


class GenerationBuilder:
    """Builds the next generation on the published one, or on ``base``: the migration of the
    published generation to the current schema version (liger_warehouse/migration/migrate.py), which is not
    published itself; the new generation then carries the migration and replaces the published one."""

    def __init__(
        self, gens: GenerationStore, raw: RawStore, now: datetime | None = None, base: Generation | None = None
    ) -> None:
        self.gens = gens
        self.raw = raw
        self.now = (now or datetime.now(UTC)).replace(tzinfo=None)
        self.prior = base or gens.current()
        self.migration = base.summary.get("migration") if base else None
        self.gen = Generation(
            id=new_generation_id(),
            parent=(base.parent if base else self.prior.id) or None,
            created_at=self.now.isoformat() + "Z",
            tables={name: list(self.prior.parts(name)) for name in INGESTED},
        )
        self.summary = Summary()
        revisions = gens.read_table(self.prior, "dim_upstream_revision").to_pylist()
        self.revisions: dict[str, dict] = {r["revision_digest"]: r for r in revisions}
        known = {t: set(gens.read_table(self.prior, t, [DIGEST_COLUMN[t]]).column(0).to_pylist()) for t in DIMENSIONS}
        self.dims = Dimensions(known)
        self.changed = base is not None  # a migration is published even when upstream holds nothing new
        self._dimension_cache: columnar.DimensionCache | None = None

    # -- the whole refresh -------------------------------------------------------------

    def build(self, listing: UpstreamListing, contents: dict[str, str]) -> Generation | None:
        """Stage the next generation, or return None when upstream holds nothing new.

        ``contents`` maps the revision digest of each fetched revision to its raw snapshot.
        """
        if self.prior.schema_version != SCHEMA_VERSION:
            raise SchemaOutdated(
                f"the published generation {self.prior.id} holds digests of schema version "
                f"{self.prior.schema_version}, this code writes version {SCHEMA_VERSION}: "
                "run `liger-warehouse refresh` to migrate it first"
            )
        listed = {revision_digest(ref): ref for ref in listing.revisions}
        pending = self._pending(listed, contents)
        self._normalized, self._to_normalize = 0, sum(map(len, pending.values()))
        for source_key in sorted(self._touched_sources(listed, pending)):
            # pop, not get: a source's revisions (and their member tables) are let go once it
            # is written, so a full build holds one source at a time, not the whole history.
            self._build_source(source_key, pending.pop(source_key, []), listed)
        watchers.report("normalize", self._normalized, self._to_normalize)
        self._write_dimensions()
        self._write_revisions(listed)
        self._write_golden(listing.golden_commits)
        self.summary.warnings += listing.problems
        self.summary.warnings += [f"GPU {g!r} is not in the GPU catalog" for g in sorted(self.dims.unknown_gpus)]
        if not self.changed:
            return None
        self.gen.summary = self._summary_dict()
        failpoint("staging")
        self.gens.stage(self.gen)
        return self.gen

    def _pending(self, listed: dict[str, RevisionRef], contents: dict[str, str]) -> dict[str, list[_Revision]]:
        pending: dict[str, list[_Revision]] = {}
        for rev_digest, ref in listed.items():
            if rev_digest in self.revisions:
                continue
            if rev_digest not in contents:
                self.summary.deferred.append(ref.label)
                continue
            pending.setdefault(ref.source_key, []).append(_Revision(ref, rev_digest, contents[rev_digest]))
        for revs in pending.values():
            revs.sort(key=lambda r: r.ref.seq)
        return pending

    def _touched_sources(self, listed: dict[str, RevisionRef], pending: dict) -> set[str]:
        """Sources with new revisions, or whose revisions left or rejoined upstream."""
        touched = set(pending)
        for rev_digest, row in self.revisions.items():
            if row["is_upstream"] != (rev_digest in listed):
                touched.add(row["source_key"])
                if rev_digest not in listed:
                    self.summary.no_longer_upstream.append(row["path"] if row["source"] != GH_PAGES else row["run"])
        return touched

    # -- one source ---------------------------------------------------------------------

    def _build_source(self, source_key: str, pending: list[_Revision], listed: dict[str, RevisionRef]) -> None:
        prior_parts = [p for p in self.prior.parts("fact_result") if p.key == source_key]
        prior = pl.from_arrow(self.gens.read_parts("fact_result", prior_parts))
        known = set(prior["result_digest"].to_list())
        new_rows: list[pl.DataFrame] = []
        for rev in pending:
            watchers.report("normalize", self._normalized, self._to_normalize, rev.ref.label)
            self._normalize_revision(rev, known, new_rows)
            self._normalized += 1
            failpoint("normalized")
        ingested = [r for r in pending if r.digest in self.revisions]
        results = pl.concat([prior, *new_rows]) if new_rows else prior
        results = self._apply_sightings(results, ingested)
        results = self._apply_current(results, source_key, ingested, listed)
        if results.equals(prior):
            return
        self._count_changes(prior, results)
        part = self.gens.write_part(
            "fact_result", source_key, fact_part_name(source_key, self.gen.id), results.to_arrow()
        )
        self._replace_parts("fact_result", source_key, [part])
        self.changed = True

    def _normalize_revision(self, rev: _Revision, known: set[str], new_rows: list[pl.DataFrame]) -> None:
        data = self.raw.get(rev.content)
        try:
            parsed, out = self.normalized(rev.ref, rev.digest, data, known)
        except FileRejected as exc:
            self.summary.rejected.append(str(exc))
            log.error("%s", exc)
            return
        new_rows.append(out.new)
        rev.new_results, rev.members = out.new.height, out.members
        rev.quarantined += [self._quarantine(rev, record, reason) for record, reason in out.rejected]
        self._write_revision_parts(rev)
        self.revisions[rev.digest] = self._revision_row(rev, parsed, data)

    def normalized(
        self, ref: RevisionRef, rev_digest: str, data: bytes, known: set[str]
    ) -> tuple[CsvFile, columnar.Normalized]:
        """One revision's file and its results not in ``known`` (which gains them), typed and
        with their digests; ``FileRejected`` when the file is not one this builder reads.

        Writes nothing: new dimension rows are collected in ``self.dims``."""
        parsed = self._split(data, f"{ref.path} at {ref.source} revision {ref.commit}")
        stem = path_stem(ref.path) if ref.source != GH_PAGES else None
        # Rows go column by column where the fields are plain; _new_result stays the definition
        # and takes every other new row (see normalize/columnar.py).
        out = columnar.normalize(
            parsed,
            ref,
            rev_digest,
            known,
            slow=lambda record, result: self._new_result(parsed, record, result, ref, rev_digest, stem),
            fast=self._columnar_rows(parsed, ref, stem),
        )
        return parsed, out

    def _columnar_rows(self, parsed: CsvFile, ref: RevisionRef, stem: str | None) -> columnar.ColumnarRows | None:
        """The columnar reader of upstream CSV rows; None for a subclass with its own rows."""
        own = GenerationBuilder._read_row, GenerationBuilder._split
        if (type(self)._read_row, type(self)._split) != own:
            return None
        if self._dimension_cache is None:
            self._dimension_cache = columnar.DimensionCache(self.dims)
        cache = self._dimension_cache
        return columnar.ColumnarRows(parsed.positions, ref.source, ref.source_key, stem, self.now, cache)

    def _split(self, data: bytes, where: str) -> CsvFile:
        """Records of one revision's file; an importer of another format overrides this."""
        return split_csv(data, where)

    def _read_row(self, parsed: CsvFile, record: Record, stem: str | None) -> tuple[Row, str | None]:
        """Typed values of one record, and the file stem its suite and backend follow; an
        importer of another format overrides this."""
        return parse_row(parsed.fields(record), self.now), stem

    def _new_result(
        self, parsed: CsvFile, record: Record, result: str, ref: RevisionRef, rev_digest: str, stem: str | None
    ) -> dict:
        row, stem = self._read_row(parsed, record, stem)
        protocol, workload = self.dims.protocol(row, stem), self.dims.workload(row)
        environment, implementation = (
            self.dims.environment(row),
            self.dims.implementation(row, stem),
        )
        return {
            "result_digest": result,
            "protocol_digest": protocol,
            "workload_digest": workload,
            "environment_digest": environment,
            "implementation_digest": implementation,
            "series_digest": self.dims.series(row, stem, protocol, workload, environment),
            "source": ref.source,
            "source_key": ref.source_key,
            "metric": row.metric,
            "unit": row.unit,
            "p20": row.p20,
            "p50": row.p50,
            "p80": row.p80,
            "observed_at": row.observed_at,
            "liger_version": row.liger_version,
            "first_revision_digest": rev_digest,
            "last_revision_digest": rev_digest,
            "is_current": False,
            "row_text": record.text,
        }

    def _quarantine(self, rev: _Revision, record: Record, reason: str) -> dict:
        ref = rev.ref
        return {
            "revision_digest": rev.digest,
            "source": ref.source,
            "source_key": ref.source_key,
            "path": ref.path,
            "commit": ref.commit,
            "ordinal": record.ordinal,
            "line_number": record.line_number,
            "row_text": record.text,
            "line_suffix": record.suffix,
            "reason": reason,
        }

    def _write_revision_parts(self, rev: _Revision) -> None:
        name = hex_part(rev.digest)
        self.gen.tables["fact_revision_member"].append(
            self.gens.write_part("fact_revision_member", rev.digest, name, rev.members)
        )
        if rev.quarantined:
            bad = pa.Table.from_pylist(rev.quarantined, schema=SCHEMAS["quarantined_row"])
            self.gen.tables["quarantined_row"].append(self.gens.write_part("quarantined_row", rev.digest, name, bad))
        self.summary.revisions.append(
            {
                "revision": rev.ref.label,
                "commit": rev.ref.commit,
                "html_url": rev.ref.html_url,
                "rows": rev.members.num_rows + len(rev.quarantined),
                "new_results": rev.new_results,
                "quarantined": len(rev.quarantined),
            }
        )

    def _revision_row(self, rev: _Revision, parsed: CsvFile, data: bytes) -> dict:
        ref = rev.ref
        release = split_run_name(ref.run)[1] if ref.run else None
        return {
            "revision_digest": rev.digest,
            "source": ref.source,
            "source_key": ref.source_key,
            "path": ref.path,
            "run": ref.run,
            "commit": ref.commit,
            "release_version": release,
            "seq": ref.seq,
            "committed_at": _timestamp(ref.committed_at),
            "message": ref.message,
            "html_url": ref.html_url,
            "content_digest": content_digest(data),
            "row_count": rev.members.num_rows + len(rev.quarantined),
            "quarantined_count": len(rev.quarantined),
            "header_text": parsed.header_text,
            "header_suffix": parsed.header_suffix,
            "is_head": False,
            "is_upstream": True,
            "ingested_at": self.now,
        }

    def _apply_sightings(self, results: pl.DataFrame, ingested: list[_Revision]) -> pl.DataFrame:
        """Widen each result's first/last revision to the new revisions that show it."""
        if not ingested:
            return results
        only = ingested[0].digest if len(ingested) == 1 else None
        if only and _all_equal(results, ("first_revision_digest", "last_revision_digest"), only):
            # One new revision, and every result was first and last seen in it (a new gh-pages
            # run, say): it cannot widen anything.
            return results
        seq = pl.DataFrame(
            {"rev": list(self.revisions), "seq": [r["seq"] for r in self.revisions.values()]},
            schema={"rev": pl.String, "seq": pl.Int64},
        )
        seen = (
            pl.DataFrame(
                {
                    "result_digest": pa.concat_arrays([c for r in ingested for c in r.members["result_digest"].chunks]),
                    "rev": [r.digest for r in ingested for _ in range(r.members.num_rows)],
                    "seq": [r.ref.seq for r in ingested for _ in range(r.members.num_rows)],
                },
                schema={"result_digest": pl.String, "rev": pl.String, "seq": pl.Int64},
            )
            .group_by("result_digest")
            .agg(
                first_seen=pl.col("rev").sort_by("seq").first(),
                first_seq=pl.col("seq").min(),
                last_seen=pl.col("rev").sort_by("seq").last(),
                last_seq=pl.col("seq").max(),
            )
        )
        out = (
            results.join(seen, on="result_digest", how="left")
            .join(
                seq.rename({"rev": "first_revision_digest", "seq": "old_first"}),
                on="first_revision_digest",
                how="left",
            )
            .join(
                seq.rename({"rev": "last_revision_digest", "seq": "old_last"}),
                on="last_revision_digest",
                how="left",
            )
            .with_columns(
                first_revision_digest=pl.when(pl.col("first_seq") < pl.col("old_first"))
                .then(pl.col("first_seen"))
                .otherwise(pl.col("first_revision_digest")),
                last_revision_digest=pl.when(pl.col("last_seq") > pl.col("old_last"))
                .then(pl.col("last_seen"))
                .otherwise(pl.col("last_revision_digest")),
            )
        )
        return out.select(results.columns)

    def _head(self, source_key: str, listed: dict[str, RevisionRef]) -> str | None:
        candidates = [
            (r["seq"], d)
            for d, r in self.revisions.items()
            if r["source_key"] == source_key and (d in listed or self._stays_head(r))
        ]
        return max(candidates)[1] if candidates else None

    def _stays_head(self, row: dict) -> bool:
        """Whether a revision that is not listed stays its source's head: an import, which
        upstream never lists, until a newer import of it or its withdrawal."""
        return row["source"] == IMPORT and row["is_head"]

    def _head_members(self, head: str, ingested: list[_Revision]) -> pl.Series:
        """The result digests of the head revision's members (repeats possible)."""
        for rev in ingested:
            if rev.digest == head:
                return pl.Series(rev.members["result_digest"], dtype=pl.String)
        parts = [p for p in self.prior.parts("fact_revision_member") if p.key == head]
        members = self.gens.read_parts("fact_revision_member", parts, ["result_digest"])
        return pl.Series(members.column(0), dtype=pl.String)

    def _apply_current(
        self,
        results: pl.DataFrame,
        source_key: str,
        ingested: list[_Revision],
        listed: dict[str, RevisionRef],
    ) -> pl.DataFrame:
        """Current means: in the newest revision of the path that upstream still lists."""
        head = self._head(source_key, listed)
        current = self._head_members(head, ingested) if head else pl.Series([], dtype=pl.String)
        return results.with_columns(is_current=pl.col("result_digest").is_in(current.implode()))

    def _count_changes(self, prior: pl.DataFrame, results: pl.DataFrame) -> None:
        if prior.is_empty():  # a new source: nothing was current before, nothing is replaced
            self.summary.added += results.height
            return
        before = prior.filter("is_current")
        after = results.filter("is_current")
        gone = before.join(after.select("result_digest"), on="result_digest", how="anti")
        replaced = gone.join(after.select("series_digest").unique(), on="series_digest", how="semi").height
        self.summary.added += results.height - prior.height
        self.summary.restated += replaced
        self.summary.removed += gone.height - replaced

    # -- small, whole tables --------------------------------------------------------------

    def _replace_parts(self, table: str, key: str, parts: list[Part]) -> None:
        self.gen.tables[table] = [p for p in self.gen.tables[table] if p.key != key] + parts

    def _write_dimensions(self) -> None:
        for table in DIMENSIONS:
            rows = list(self.dims.new[table].values())
            if rows:
                data = pa.Table.from_pylist(rows, schema=SCHEMAS[table])
                self.gen.tables[table].append(self.gens.write_part(table, self.gen.id, self.gen.id, data))
                self.changed = True
        versions = self.gens.read_table(self.prior, "dim_implementation", ["liger_version"]).column(0).to_pylist()
        versions += [r["liger_version"] for r in self.dims.new["dim_implementation"].values()]
        table = _version_table(set(versions))
        if table.num_rows != self.prior.rows("dim_version"):
            self._replace_whole("dim_version", table)

    def _write_revisions(self, listed: dict[str, RevisionRef]) -> None:
        heads = {self._head(r["source_key"], listed) for r in self.revisions.values()}
        rows = []
        for rev_digest, row in sorted(self.revisions.items(), key=lambda kv: (kv[1]["source_key"], kv[1]["seq"])):
            upstream, head = rev_digest in listed and row["source"] != IMPORT, rev_digest in heads
            self.changed |= row["is_upstream"] != upstream or row["is_head"] != head
            rows.append({**row, "is_upstream": upstream, "is_head": head})
        if self.changed:
            self._replace_whole(
                "dim_upstream_revision",
                pa.Table.from_pylist(rows, schema=SCHEMAS["dim_upstream_revision"]),
            )

    def _write_golden(self, golden: bytes | None) -> None:
        if golden is None:
            return
        value = content_digest(golden)
        prior = self.gens.read_table(self.prior, "golden_commit", ["content_digest"]).column(0).to_pylist()
        if prior[:1] == [value]:
            return
        data = json.loads(golden)
        default = data.get("default_commit")
        rows = [
            {"kernel": kernel, "run": run, "is_default": run == default, "content_digest": value}
            for kernel, run in sorted((data.get("golden_commits") or {}).items())
        ]
        self._replace_whole("golden_commit", pa.Table.from_pylist(rows, schema=SCHEMAS["golden_commit"]))

    def _replace_whole(self, table: str, data: pa.Table) -> None:
        self.gen.tables[table] = [self.gens.write_part(table, "all", self.gen.id, data)]
        self.changed = True

    def _summary_dict(self) -> dict:
        s = self.summary
        return {
            "revisions_ingested": len(s.revisions),
            "results_added": s.added,
            "results_restated": s.restated,
            "results_removed": s.removed,
            "revisions": s.revisions,
            "rejected": s.rejected,
            "deferred": s.deferred,
            "warnings": s.warnings,
            "no_longer_upstream": s.no_longer_upstream,
            "row_counts": {t: self.gen.rows(t) for t in INGESTED},
            **({"migration": self.migration} if self.migration else {}),
        }


def _version_table(versions: set[str]) -> pa.Table:
    parsed = sorted((parse_version(v), v) for v in versions if parse_version(v) is not None)
    rows = [
        {
            "liger_version": text,
            "version_rank": rank,
            "major": v.major,
            "minor": v.minor,
            "patch": v.micro,
            "is_prerelease": v.is_prerelease,
        }
        for rank, (v, text) in enumerate(parsed, start=1)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["dim_version"])


def _all_equal(df: pl.DataFrame, columns: tuple[str, ...], value: str) -> bool:
    """Whether every row of ``df`` holds ``value`` in each of ``columns``."""
    return bool(df.select(pl.all_horizontal(pl.col(c).eq_missing(value) for c in columns).all()).item())


def fact_part_name(source_key: str, gen_id: str) -> str:
    """The file name of a source's ``fact_result`` part written by generation ``gen_id``."""
    slug = "".join(c if c.isalnum() else "-" for c in source_key).strip("-").lower()
    return f"{slug}-{gen_id}"
