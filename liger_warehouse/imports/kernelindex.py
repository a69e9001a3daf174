"""Import kernelindex.dev/v1alpha1 records (NDJSON) into the warehouse as their own source.

An import is ingested like an upstream revision: the file is stored as a raw snapshot, each
line becomes a record with its exact text and the text after it (so the file rebuilds byte for
byte), every valid record becomes a ``fact_result`` row and every invalid one a
``quarantined_row`` with the reason. The source is ``import`` and the source key
``import:<name>``; importing a changed file under the same name is the next revision of that
source, importing the same bytes again changes nothing. A source can be withdrawn: none of its
revisions is head any more, so none of its results is current, and nothing is deleted.

This module stages (``stage_import``, ``stage_withdrawal``); the ``imports`` job audits and
publishes (pipelines/defs/imports). A change is worked out against pending writes and written
only when it is valid, so a refused import and a dry run (``preview_import``) write nothing.

Digests (the rule, also in docs/EXPORTS.md): a record carries four dimension digests, but not
every identity field behind them (not which parameter was the x axis, the x label, the original
config spelling, nor which upstream file, so which suite and backend). A claimed digest is kept
when the warehouse holds that dimension row and the row agrees with the record, checked by
recomputing the digest through the same identity function with the row's missing fields; the
upstream file is the one the claimed protocol's harness names. Otherwise the digest is recomputed
from the record alone (x name, label and value empty, config as decoded from the workload slug,
the main file's suite, backend from the provider). So re-importing an export gives back the
original digests, and a foreign record gets honest digests of what it says. ``result_digest``
follows the upstream rule: one distinct line of text within one source.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import SimpleNamespace
from typing import Any, ClassVar

from liger_warehouse.build.ingest import GenerationBuilder
from liger_warehouse.imports.ndjson import read_record, split_ndjson
from liger_warehouse.model.catalog.gpus import gpu_slug
from liger_warehouse.model.digests import canonical_json, content_digest, digest, hex_part
from liger_warehouse.model.revisions import IMPORT, RevisionRef, UpstreamListing, revision_digest
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.normalize.csvfile import CsvFile, FileRejected, Record
from liger_warehouse.normalize.rows import (
    Row,
    stem_of_harness,
    workload_identity,
)
from liger_warehouse.store.generations import Generation, GenerationStore
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import PendingWrites

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ImportRejected(RuntimeError):
    """The import cannot be staged (not one valid record); nothing of it was written."""


class UnknownImport(ValueError):
    """No import source has that name."""


def source_key(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(f"import name must match {NAME.pattern}: {name!r}")
    return f"{IMPORT}:{name}"


def import_ref(name: str, data: bytes) -> RevisionRef:
    """The revision importing ``data`` as ``import:<name>`` is: its identity is the bytes'."""
    return RevisionRef(source=IMPORT, path=source_key(name), commit=hex_part(content_digest(data)))


def unchanged_by(gens: GenerationStore, name: str, data: bytes | None) -> str:
    """Why importing ``data`` as ``import:<name>`` (or, ``data`` None, withdrawing that source)
    would change nothing; "" when it would change something. Reads one small table."""
    key = source_key(name)
    rows = gens.read_table(gens.current(), "dim_upstream_revision").to_pylist()
    digest_ = None if data is None else revision_digest(import_ref(name, data))
    return _unchanged({r["revision_digest"]: r for r in rows}, key, digest_)


def _unchanged(revisions: dict[str, dict], key: str, revision: str | None) -> str:
    """Why importing ``revision`` of ``key`` (None: withdrawing ``key``) changes nothing.

    An import source is withdrawn when it has revisions and none of them is head. The same
    bytes again change nothing, unless the source is withdrawn: then they make it current."""
    rows = [r for r in revisions.values() if r["source_key"] == key]
    withdrawn = bool(rows) and not any(r["is_head"] for r in rows)
    if revision is not None:
        return "this file is already imported" if revision in revisions and not withdrawn else ""
    if not rows:
        names = sorted(
            {r["source_key"].removeprefix(f"{IMPORT}:") for r in revisions.values() if r["source"] == IMPORT}
        )
        raise UnknownImport(
            f"there is no import named {key.removeprefix(f'{IMPORT}:')!r}; imported: {', '.join(names) or 'none'}"
        )
    return "already withdrawn" if withdrawn else ""


# -- digests: keep a claim the warehouse can verify, else recompute ----------------------------


@dataclass
class Claims:
    """The prior generation's dimension rows, by digest, to check a record's claimed digests."""

    workloads: dict[str, dict] = field(default_factory=dict)
    environments: dict[str, str] = field(default_factory=dict)
    implementations: dict[str, dict] = field(default_factory=dict)
    protocols: dict[str, dict] = field(default_factory=dict)
    _workloads: dict[tuple, tuple] = field(default_factory=dict)

    @classmethod
    def load(cls, gens: GenerationStore, gen: Generation) -> Claims:
        def rows(table: str, key: str) -> dict[str, dict]:
            return {r[key]: r for r in gens.read_table(gen, table).to_pylist()}

        environments = rows("dim_environment", "environment_digest")
        return cls(
            workloads=rows("dim_workload", "workload_digest"),
            environments={d: r["gpu_name"] for d, r in environments.items()},
            implementations=rows("dim_implementation", "implementation_digest"),
            protocols=rows("dim_protocol", "protocol_digest"),
        )

    def workload(self, fields: dict[str, Any]) -> tuple[str, str, str, dict, str]:
        """(x_name, x_label, x_value, config, config_text) of the claimed workload if it holds,
        else of the record alone; worked out once per workload, records share the config."""
        key = (fields["workload_digest"], fields["kernel"], fields["workload_slug"])
        if key not in self._workloads:
            claimed = self.workloads.get(fields["workload_digest"])
            if claimed is not None and _workload_holds(claimed, fields):
                x = claimed["x_name"], claimed["x_label"], claimed["x_value"]
                config = json.loads(claimed["config_json"])
            else:
                x, config = ("", "", ""), fields["config"]
            self._workloads[key] = (*x, config, canonical_json(config))
        return self._workloads[key]

    def gpu_name(self, fields: dict[str, Any]) -> str:
        claimed = self.environments.get(fields["environment_digest"])
        if claimed is not None and gpu_slug(claimed) == gpu_slug(fields["gpu_name"]):
            return claimed
        return fields["gpu_name"]

    def stem(self, fields: dict[str, Any]) -> str | None:
        """The upstream file stem the claimed protocol's harness names, else None."""
        claimed = self.protocols.get(fields["protocol_digest"])
        said = (fields["operation_mode"], fields["metric"], fields["unit"])
        if claimed is None or (claimed["timed_pass"], claimed["metric"], claimed["unit"]) != said:
            return None
        return stem_of_harness(claimed["harness"])


def _workload_holds(claimed: dict, fields: dict[str, Any]) -> bool:
    if (claimed["kernel"], claimed["slug"]) != (fields["kernel"], fields["workload_slug"]):
        return False
    # The very identity function ingest used, fed the record's kernel and the row's other fields.
    identity = workload_identity(
        SimpleNamespace(
            kernel=fields["kernel"],
            x_name=claimed["x_name"],
            x_label=claimed["x_label"],
            x_value=claimed["x_value"],
            config=json.loads(claimed["config_json"]),
        )
    )
    return digest(identity) == claimed["workload_digest"]


# -- the rows of an import, and the builder that reads them ------------------------------------


@dataclass
class KernelindexRows:
    """The records of a kernelindex NDJSON file, as the builder's ``RowSource``: one record a
    line, its digests kept when ``claims`` verify them."""

    claims: Claims
    reads_columns: ClassVar[bool] = False  # records are JSON, not upstream CSV rows

    def split(self, data: bytes, where: str) -> CsvFile:
        return split_ndjson(data, where)

    def read_row(self, parsed: CsvFile, record: Record, stem: str | None, now: datetime) -> tuple[Row, str | None]:
        fields = read_record(record.text, now)
        return self._row(fields), self.claims.stem(fields)

    def _row(self, fields: dict[str, Any]) -> Row:
        x_name, x_label, x_value, config, config_text = self.claims.workload(fields)
        return Row(
            kernel=fields["kernel"],
            provider=fields["provider"],
            mode=fields["operation_mode"],
            metric=fields["metric"],
            unit=fields["unit"],
            x_name=x_name,
            x_label=x_label,
            x_value=x_value,
            p50=fields["p50"],
            p20=fields["p20"],
            p80=fields["p80"],
            config_text=config_text,
            config=config,
            gpu_name=self.claims.gpu_name(fields),
            observed_at=fields["observed_at"],
            liger_version=fields["liger_version"],
        )


def _import_builder(gens: GenerationStore, raw: RawStore, now: datetime | None = None) -> GenerationBuilder:
    """A builder that reads new revisions as kernelindex records, their claims checked against
    the generation it builds on."""
    builder = GenerationBuilder(gens, raw, now)
    builder.rows = KernelindexRows(Claims.load(gens, builder.prior))
    return builder


def _revision_ref(builder: GenerationBuilder, name: str, data: bytes) -> RevisionRef:
    """The revision importing ``data`` as ``import:<name>`` is, next in its source."""
    ref = import_ref(name, data)
    seq = max((r["seq"] for r in builder.revisions.values() if r["source_key"] == ref.source_key), default=0)
    return replace(
        ref,
        seq=seq + 1,
        committed_at=builder.now.isoformat() + "Z",
        message=f"liger-warehouse import kernelindex ({name})",
    )


def _listing_with(builder: GenerationBuilder, ref: RevisionRef | None = None) -> UpstreamListing:
    """What upstream listed at the last refresh, plus the import: nothing upstream changes."""
    listed = [_ref(row) for row in builder.revisions.values() if row["is_upstream"]]
    return UpstreamListing(revisions=[*listed, *([ref] if ref else [])])


def _ref(row: dict) -> RevisionRef:
    return RevisionRef(source=row["source"], path=row["path"], commit=row["commit"], run=row["run"], seq=row["seq"])


# -- one import or withdrawal, staged ------------------------------------------------------------


@dataclass
class ImportOutcome:
    """What an import or a withdrawal stages, or would stage (a dry run)."""

    source_key: str
    generation: str | None = None  # the staged generation; None when nothing changes
    unchanged: str = ""  # why nothing changes
    revision_digest: str | None = None
    records: int = 0
    results_added: int = 0
    quarantined: int = 0
    reasons: list[str] = field(default_factory=list)
    reinstated: bool = False  # a withdrawn source is current again
    results_withdrawn: int = 0
    new_digests: dict[str, list[str]] = field(default_factory=dict)  # table: digests first held


def stage_import(gens: GenerationStore, data: bytes, name: str, now: datetime | None = None) -> ImportOutcome:
    """Ingest one NDJSON file as source ``import:<name>`` and stage the next generation; the
    import job audits and publishes it.

    Holds the warehouse's build lock (``RefreshBusy`` if a refresh is building). Writes nothing
    when it raises: ``FileRejected`` for a file that is not NDJSON text, ``ImportRejected``
    when not one record is valid. The same bytes again change nothing, unless the source was
    withdrawn: then they make it current again."""
    with gens.try_lock("build"):
        return _import(gens, data, name, now, commit=True)


def preview_import(gens: GenerationStore, data: bytes, name: str, now: datetime | None = None) -> ImportOutcome:
    """What ``stage_import`` would stage, raising what it would raise, writing nothing at all."""
    return _import(gens, data, name, now, commit=False)


def stage_withdrawal(gens: GenerationStore, name: str, now: datetime | None = None) -> ImportOutcome:
    """Stage the generation in which source ``import:<name>`` is withdrawn: none of its
    revisions is head, so none of its results is current. Its results, revisions and raw
    snapshots stay; ``restatements`` shows the results as 'withdrawn'. Holds the build lock."""
    key = source_key(name)
    with gens.try_lock("build"):
        pending, builder = _pending_builder(gens, now)
        outcome = ImportOutcome(key, unchanged=_unchanged(builder.revisions, key, None))
        if outcome.unchanged:
            return outcome
        gen = builder.build(_listing_with(builder), {}, withdraw=key)
        assert gen is not None, "a withdrawal always changes the head of its source"
        _carry_over(builder.gens, builder.prior, gen)
        outcome.generation = gen.id
        outcome.results_withdrawn = builder.summary.removed + builder.summary.restated
        pending.commit()
    return outcome


def _pending_builder(gens: GenerationStore, now: datetime | None) -> tuple[PendingWrites, GenerationBuilder]:
    # Built against pending writes: a refused import or a dry run leaves no byte behind.
    pending = PendingWrites(gens.storage)
    return pending, _import_builder(GenerationStore(pending), RawStore(pending), now)


def _import(gens: GenerationStore, data: bytes, name: str, now: datetime | None, commit: bool) -> ImportOutcome:
    pending, builder = _pending_builder(gens, now)
    ref = _revision_ref(builder, name, data)
    outcome = ImportOutcome(ref.source_key, revision_digest=revision_digest(ref))
    outcome.unchanged = _unchanged(builder.revisions, ref.source_key, outcome.revision_digest)
    if outcome.unchanged:
        return outcome
    held = builder.revisions.get(outcome.revision_digest)
    contents = {} if held else {outcome.revision_digest: builder.raw.put(ref, data)}
    gen = builder.build(_listing_with(builder, ref), contents)
    if builder.summary.rejected:
        raise FileRejected(builder.summary.rejected[0])
    _carry_over(builder.gens, builder.prior, gen)
    _describe(outcome, builder, gen, held)
    if outcome.records == outcome.quarantined:
        first = outcome.reasons[0] if outcome.reasons else "no record"
        raise ImportRejected(
            f"{ref.source_key}: no valid record among {outcome.records} ({_shorten(first)}); nothing was imported"
        )
    if commit:
        pending.commit()
    return outcome


def _carry_over(gens: GenerationStore, prior: Generation, gen: Generation) -> None:
    # Tables the builder does not write (derived later from upstream history, which an import
    # does not touch) keep the prior generation's parts.
    missing = [t for t in SCHEMAS if t not in gen.tables]
    for table in missing:
        gen.tables[table] = list(prior.parts(table))
    if missing:
        gens.stage(gen)


def _describe(outcome: ImportOutcome, builder: GenerationBuilder, gen: Generation, held: dict | None) -> None:
    gens, digest_ = builder.gens, outcome.revision_digest
    if held is None:
        revision = gen.summary["revisions"][0]  # the import is the only revision this build ingested
        outcome.records, outcome.quarantined = revision["rows"], revision["quarantined"]
        outcome.results_added = revision["new_results"]
    else:
        outcome.records, outcome.quarantined = held["row_count"], held["quarantined_count"]
        outcome.reinstated = True
    bad = gens.read_parts("quarantined_row", [p for p in gen.parts("quarantined_row") if p.key == digest_])
    outcome.reasons = [f"line {r['line_number']}: {r['reason']}" for r in bad.to_pylist()]
    outcome.generation = gen.id
    outcome.new_digests = _new_digests(builder, gen, outcome.source_key)


def _new_digests(builder: GenerationBuilder, gen: Generation, key: str) -> dict[str, list[str]]:
    """Per table, the digests ``gen`` holds that the prior generation did not."""
    new = {table: sorted(rows) for table, rows in builder.dims.new.items() if rows}

    def results(g: Generation) -> set[str]:
        parts = [p for p in g.parts("fact_result") if p.key == key]
        return set(builder.gens.read_parts("fact_result", parts, ["result_digest"]).column(0).to_pylist())

    if added := results(gen) - results(builder.prior):
        new["fact_result"] = sorted(added)
    return new


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
