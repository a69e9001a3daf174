"""Import kernelindex.dev/v1alpha1 records (NDJSON) into the warehouse as their own source.

An import is ingested like an upstream revision: the file is stored as a raw snapshot, each
line becomes a record with its exact text and the text after it (so the file rebuilds byte for
byte), every valid record becomes a ``fact_result`` row and every invalid one a
``quarantined_row`` with the reason. The source is ``import`` and the source key
``import:<name>``; importing a changed file under the same name is the next revision of that
source, importing the same bytes again changes nothing.

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
from dataclasses import dataclass, field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import orjson

from pipelines import checks
from pipelines.catalog.gpus import gpu_slug
from pipelines.digests import canonical_json, content_digest, digest, hex_part
from pipelines.export.kernelindex import RULES, result_from_kernelindex
from pipelines.ingest import GenerationBuilder, revision_digest
from pipelines.normalize.csvfile import CsvFile, FileRejected, Record
from pipelines.normalize.rows import (
    FUTURE_SLACK,
    Row,
    RowRejected,
    stem_of_harness,
    workload_identity,
)
from pipelines.store.generations import Generation, GenerationStore
from pipelines.store.raw import RawStore
from pipelines.tables import SCHEMAS
from pipelines.upstream.model import IMPORT, RevisionRef, UpstreamListing

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_LINE = re.compile(r"(\r\n|\n|\r)")


class ImportRejected(RuntimeError):
    """The import would break the warehouse's integrity checks; nothing was published."""


def source_key(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(f"import name must match {NAME.pattern}: {name!r}")
    return f"{IMPORT}:{name}"


# -- the file: one record per non-blank line --------------------------------------------------


def split_ndjson(data: bytes, where: str) -> CsvFile:
    """Lines as records, each with the exact text after it (terminator plus blank lines).

    NDJSON has no header: ``header_text`` is empty and ``header_suffix`` holds any blank lines
    before the first record, so ``CsvFile.text()`` is the file again.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRejected(f"{where}: not UTF-8 (byte {exc.start})") from None
    pieces = _LINE.split(text)
    lead, records = "", []
    for i in range(0, len(pieces), 2):
        line, end = pieces[i], pieces[i + 1] if i + 1 < len(pieces) else ""
        if line.strip():
            records.append(Record(len(records) + 1, i // 2 + 1, line, end))
        elif records:  # a blank line belongs to the text after the record before it
            last = records[-1]
            records[-1] = Record(last.ordinal, last.line_number, last.text, last.suffix + line + end)
        else:
            lead += line + end
    parsed = CsvFile("", lead, (), records)
    if not records:
        raise FileRejected(f"{where}: no records")
    if parsed.text() != text:
        raise FileRejected(f"{where}: could not split the file into lines losslessly")
    return parsed


def read_record(text: str, now: datetime) -> dict[str, Any]:
    """The warehouse fields of one record line, or ``ValueError``/``RowRejected`` saying why not."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RowRejected(f"not JSON: {exc}") from None
    fields = result_from_kernelindex(record)  # validates against the schema first
    spec = record["run"]["spec"]
    fields["workload_slug"] = spec["sourceNative"]["externalId"].split("/")[-2]
    if not fields["p20"] <= fields["p50"] <= fields["p80"]:
        raise RowRejected(f"quantiles out of order: {spec['sourceNative']['metrics']}")
    if fields["observed_at"] > now + FUTURE_SLACK:
        raise RowRejected(f"observedAt is in the future: {spec['observedAt']}")
    _check_numbers(record, fields)
    return fields


def _check_numbers(record: dict[str, Any], fields: dict[str, Any]) -> None:
    """The median and measurements must be what the export rules make of sourceNative.metrics.

    The warehouse keeps the exact upstream numbers (``sourceNative.metrics``); integer
    nanoseconds or bytes that disagree with them would be a second, contradicting reading.
    """
    rule, spec = RULES[fields["metric"]], record["run"]["spec"]
    median = spec[rule.block][rule.quantity]["median"]
    measured = {m["statistic"]: m["value"] for m in spec["measurements"]}
    expected = {q: round(fields[q] * rule.scale) for q in ("p20", "p50", "p80")}
    if (
        median != expected["p50"]
        or len(spec["measurements"]) != 2
        or measured != {q: expected[q] for q in ("p20", "p80")}
    ):
        raise RowRejected(
            f"run.spec median/measurements do not follow from sourceNative.metrics "
            f"(rounded {expected}): median {median}, measurements {measured}"
        )


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


# -- the builder -------------------------------------------------------------------------------


class KernelindexImporter(GenerationBuilder):
    """``GenerationBuilder`` for one NDJSON file: its own split and its own row reading."""

    def __init__(self, gens: GenerationStore, raw: RawStore, now: datetime | None = None) -> None:
        super().__init__(gens, raw, now)
        self.claims = Claims.load(gens, self.prior)

    def revision_ref(self, name: str, data: bytes) -> RevisionRef:
        key = source_key(name)
        seq = max((r["seq"] for r in self.revisions.values() if r["source_key"] == key), default=0)
        return RevisionRef(
            source=IMPORT,
            path=key,
            commit=hex_part(content_digest(data)),
            seq=seq + 1,
            committed_at=self.now.isoformat() + "Z",
            message=f"liger-warehouse import kernelindex ({name})",
        )

    def listing_with(self, ref: RevisionRef) -> UpstreamListing:
        """What upstream listed at the last refresh, plus the import: nothing upstream changes."""
        listed = [_ref(row) for row in self.revisions.values() if row["is_upstream"]]
        return UpstreamListing(revisions=[*listed, ref])

    def _split(self, data: bytes, where: str) -> CsvFile:
        return split_ndjson(data, where)

    def _read_row(self, parsed: CsvFile, record: Record, stem: str | None) -> tuple[Row, str | None]:
        fields = read_record(record.text, self.now)
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


def _ref(row: dict) -> RevisionRef:
    return RevisionRef(source=row["source"], path=row["path"], commit=row["commit"], run=row["run"], seq=row["seq"])


# -- one import, end to end --------------------------------------------------------------------


@dataclass
class ImportOutcome:
    source_key: str
    revision_digest: str
    generation: str | None = None
    records: int = 0
    results_added: int = 0
    quarantined: int = 0
    reasons: list[str] = field(default_factory=list)
    already_imported: bool = False


def import_kernelindex(
    gens: GenerationStore, raw: RawStore, data: bytes, name: str, now: datetime | None = None
) -> ImportOutcome:
    """Ingest one NDJSON file as source ``import:<name>``, audit the result and publish it.

    Holds the warehouse's build lock (``RefreshBusy`` if a refresh is building). Raises
    ``FileRejected`` for a file that is not NDJSON text and ``ImportRejected`` when the staged
    generation fails an integrity check.
    """
    with gens.try_lock("build"):
        builder = KernelindexImporter(gens, raw, now)
        ref = builder.revision_ref(name, data)
        outcome = ImportOutcome(ref.source_key, revision_digest(ref))
        if outcome.revision_digest in builder.revisions:
            outcome.already_imported = True
            return outcome
        contents = {outcome.revision_digest: raw.put(ref, data)}
        gen = builder.build(builder.listing_with(ref), contents)
        if builder.summary.rejected or gen is None:
            raise FileRejected((builder.summary.rejected or [f"{name}: nothing to import"])[0])
        _carry_over(gens, builder.prior, gen)
        _audit(gens, gen, outcome.revision_digest, data)
        gens.publish(gen)
    return _outcome(outcome, gens, gen)


def _carry_over(gens: GenerationStore, prior: Generation, gen: Generation) -> None:
    # Tables the builder does not write (derived later from upstream history, which an import
    # does not touch) keep the prior generation's parts.
    missing = [t for t in SCHEMAS if t not in gen.tables]
    for table in missing:
        gen.tables[table] = list(prior.parts(table))
    if missing:
        gens.stage(gen)


def _audit(gens: GenerationStore, gen: Generation, revision: str, data: bytes) -> None:
    failed = [o for o in checks.all_checks(gens, gen) if not o.passed]
    if failed:
        raise ImportRejected("; ".join(f"{o.table}.{o.name}: {o.examples[:2]}" for o in failed))
    # Independent of split_ndjson: every non-blank line is accounted for.
    lines = sum(1 for line in data.splitlines() if line.strip())  # bytes: \n, \r\n and \r only
    con = checks.connect(gens, gen)
    try:
        held = con.execute(
            "select row_count from dim_upstream_revision where revision_digest = ?", [revision]
        ).fetchall()
    finally:
        con.close()
    if held != [(lines,)]:
        raise ImportRejected(f"the file has {lines} records, the staged revision {held}")


def _outcome(outcome: ImportOutcome, gens: GenerationStore, gen: Generation) -> ImportOutcome:
    summary = gen.summary
    revision = summary["revisions"][0]  # the import is the only revision this build ingested
    outcome.generation = gen.id
    outcome.records = revision["rows"]
    outcome.results_added = revision["new_results"]
    outcome.quarantined = revision["quarantined"]
    bad = gens.read_table(gen, "quarantined_row", ["revision_digest", "line_number", "reason"])
    outcome.reasons = [
        f"line {r['line_number']}: {r['reason']}"
        for r in bad.to_pylist()
        if r["revision_digest"] == outcome.revision_digest
    ]
    return outcome
