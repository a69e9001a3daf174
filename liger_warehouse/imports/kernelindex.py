"""Import kernelindex.dev/v1alpha1 records (NDJSON) into the warehouse as their own source.

An import is ingested like an upstream revision: the file is stored as a raw snapshot, each
line becomes a record with its exact text and the text after it (so the file rebuilds byte for
byte), every valid record becomes a ``fact_result`` row and every invalid one a
``quarantined_row`` with the reason. The source is ``import`` and the source key
``import:<name>``; importing a changed file under the same name is the next revision of that
source, importing the same bytes again changes nothing. A source can be withdrawn: none of its
revisions is head any more, so none of its results is current, and nothing is deleted.

``import_file`` and ``withdraw_import`` publish through the refresh's own transaction (ingest,
change points, derived tables, blocking checks: build/publish.py) as the lake's next snapshot;
nothing upstream changes. An import is first worked out in a transaction that is rolled back,
its raw snapshot held in memory (``preview_import``, the dry run), so a refused file writes
nothing at all.

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
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, ClassVar

import duckdb

from liger_warehouse.build.ingest import Ingest
from liger_warehouse.build.publish import Published, publish
from liger_warehouse.imports.ndjson import read_record, split_ndjson
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake, NoWarehouse
from liger_warehouse.model.catalog.gpus import gpu_slug
from liger_warehouse.model.digests import canonical_json, content_digest, digest, hex_part
from liger_warehouse.model.revisions import IMPORT, RevisionRef, UpstreamListing, revision_digest
from liger_warehouse.normalize.csvfile import CsvFile, FileRejected, Record
from liger_warehouse.normalize.rows import Row, stem_of_harness, workload_identity
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import PendingWrites

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ImportRejected(RuntimeError):
    """The import cannot be published (not one valid record); nothing of it was written."""


class UnknownImport(ValueError):
    """No import source has that name."""


def source_key(name: str) -> str:
    """The source key of import ``name``; ``ValueError`` for a name that cannot be one."""
    if not NAME.fullmatch(name):
        raise ValueError(f"import name must match {NAME.pattern}: {name!r}")
    return f"{IMPORT}:{name}"


def import_ref(name: str, data: bytes) -> RevisionRef:
    """The revision importing ``data`` as ``import:<name>`` is: its identity is the bytes'."""
    return RevisionRef(source=IMPORT, path=source_key(name), commit=hex_part(content_digest(data)))


def unchanged_by(lake: Lake, name: str, data: bytes | None) -> str:
    """Why importing ``data`` as ``import:<name>`` (or, ``data`` None, withdrawing that source)
    would change nothing; "" when it would change something. Reads one small table."""
    key = source_key(name)
    digest_ = None if data is None else revision_digest(import_ref(name, data))
    with open_lake(lake, read_only=True) as con:
        return _unchanged(_held(con), key, digest_)


def _held(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    """The ``dim_upstream_revision`` rows ``con`` reads, by revision digest."""
    rows = con.execute("select * from dim_upstream_revision").to_arrow_table().to_pylist()
    return {r["revision_digest"]: r for r in rows}


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
    """The lake's dimension rows, by digest, to check a record's claimed digests."""

    workloads: dict[str, dict] = field(default_factory=dict)
    environments: dict[str, str] = field(default_factory=dict)
    protocols: dict[str, dict] = field(default_factory=dict)
    _workloads: dict[tuple, tuple] = field(default_factory=dict)

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection) -> Claims:
        """The dimension rows the transaction of ``con`` reads."""

        def rows(table: str, key: str) -> dict[str, dict]:
            return {r[key]: r for r in con.execute(f"select * from {table}").to_arrow_table().to_pylist()}

        environments = rows("dim_environment", "environment_digest")
        return cls(
            workloads=rows("dim_workload", "workload_digest"),
            environments={d: r["gpu_name"] for d, r in environments.items()},
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


# -- the rows of an import -----------------------------------------------------------------------


@dataclass
class KernelindexRows:
    """The records of a kernelindex NDJSON file, as ingest's ``RowSource``: one record a line,
    its digests kept when ``claims`` verify them."""

    claims: Claims
    reads_columns: ClassVar[bool] = False  # records are JSON, not upstream CSV rows

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection) -> KernelindexRows:
        """Records checked against the dimension rows of the transaction of ``con``."""
        return cls(Claims.load(con))

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


def _revision_ref(held: dict[str, dict], name: str, data: bytes, now: datetime) -> RevisionRef:
    """The revision importing ``data`` as ``import:<name>`` is, next in its source."""
    ref = import_ref(name, data)
    seq = max((r["seq"] for r in held.values() if r["source_key"] == ref.source_key), default=0)
    return replace(
        ref,
        seq=seq + 1,
        committed_at=now.isoformat() + "Z",
        message=f"liger-warehouse import kernelindex ({name})",
    )


def _listing_with(held: dict[str, dict], ref: RevisionRef | None = None) -> UpstreamListing:
    """What upstream listed at the last refresh, plus the import: nothing upstream changes."""
    listed = [_ref(row) for row in held.values() if row["is_upstream"]]
    return UpstreamListing(revisions=[*listed, *([ref] if ref else [])])


def _ref(row: dict) -> RevisionRef:
    return RevisionRef(source=row["source"], path=row["path"], commit=row["commit"], run=row["run"], seq=row["seq"])


# -- one import or withdrawal ----------------------------------------------------------------------


@dataclass
class ImportOutcome:
    """What an import or a withdrawal published, or would publish (a dry run)."""

    source_key: str
    published: Published | None = None  # None when nothing was published (unchanged, or a dry run)
    unchanged: str = ""  # why nothing changes
    revision_digest: str | None = None
    records: int = 0
    results_added: int = 0
    quarantined: int = 0
    reasons: list[str] = field(default_factory=list)
    reinstated: bool = False  # a withdrawn source is current again
    results_withdrawn: int = 0
    new_digests: dict[str, list[str]] = field(default_factory=dict)  # table: digests first held

    @property
    def snapshot(self) -> int | None:
        """The lake snapshot it published, or None."""
        return self.published.snapshot if self.published else None


def import_file(lake: Lake, raw: RawStore, data: bytes, name: str, now: datetime | None = None) -> ImportOutcome:
    """Publish the records of one NDJSON file as source ``import:<name>``: the lake's next snapshot.

    Publishes nothing when it raises. ``FileRejected`` (a file that is not NDJSON text) and
    ``ImportRejected`` (not one valid record) come before anything is written; after
    ``ChecksFailed`` or ``PublishConflict`` only the raw snapshot stays, as a refresh's do. The
    same bytes again change nothing, unless the source was withdrawn: then they make it current
    again."""
    now = _now(now)
    outcome, ref, held = _work_out(lake, raw, data, name, now)
    if outcome.unchanged:
        return outcome
    contents = {} if outcome.reinstated else {outcome.revision_digest: raw.put(ref, data)}
    outcome.published = publish(
        lake,
        raw,
        _listing_with(held, ref),
        contents,
        rows=KernelindexRows.of,
        message=f"import {outcome.source_key}",
        now=now,
    )
    return outcome


def preview_import(lake: Lake, raw: RawStore, data: bytes, name: str, now: datetime | None = None) -> ImportOutcome:
    """What ``import_file`` would publish, raising what it would raise before publishing,
    writing nothing at all (the dry run)."""
    outcome, _, _ = _work_out(lake, raw, data, name, _now(now))
    return outcome


def withdraw_import(lake: Lake, raw: RawStore, name: str, now: datetime | None = None) -> ImportOutcome:
    """Publish the snapshot in which source ``import:<name>`` is withdrawn: none of its
    revisions is head, so none of its results is current. Its results, revisions and raw
    snapshots stay; ``restatements`` shows the results as 'withdrawn'. ``UnknownImport`` when
    there is no such source."""
    key = source_key(name)
    with open_lake(lake, read_only=True) as con:
        held = _held(con)
    outcome = ImportOutcome(key, unchanged=_unchanged(held, key, None))
    if outcome.unchanged:
        return outcome
    published = publish(lake, raw, _listing_with(held), {}, withdraw=key, message=f"withdraw {key}", now=now)
    assert published.snapshot is not None, "a withdrawal always changes the head of its source"
    outcome.published = published
    outcome.results_withdrawn = published.summary["results_removed"] + published.summary["results_restated"]
    return outcome


def _now(now: datetime | None) -> datetime:
    # One clock for the dry run and the publish: both date the revision alike.
    return (now or datetime.now(UTC)).replace(tzinfo=None)


def _work_out(
    lake: Lake, raw: RawStore, data: bytes, name: str, now: datetime
) -> tuple[ImportOutcome, RevisionRef, dict[str, dict]]:
    """The import ingested in a transaction that is never committed, its raw snapshot held in
    memory: what it would change, the revision it is, and the revisions the lake holds."""
    key = source_key(name)
    if not lake.exists():
        raise NoWarehouse(f"no warehouse at {lake.catalog}: run `liger-warehouse refresh` before importing into it")
    con = open_lake(lake)
    try:
        con.execute("begin")
        held = _held(con)
        ref = _revision_ref(held, name, data, now)
        outcome = ImportOutcome(key, revision_digest=revision_digest(ref))
        outcome.unchanged = _unchanged(held, key, outcome.revision_digest)
        if not outcome.unchanged:
            _ingest(con, RawStore(PendingWrites(raw.storage), raw.max_bytes), data, ref, held, now, outcome)
        return outcome, ref, held
    finally:
        con.close()  # uncommitted: DuckLake rolls the transaction back and removes the files it wrote


def _ingest(
    con: duckdb.DuckDBPyConnection,
    raw: RawStore,
    data: bytes,
    ref: RevisionRef,
    held: dict[str, dict],
    now: datetime,
    outcome: ImportOutcome,
) -> None:
    """Ingest the import into the transaction of ``con`` and describe it in ``outcome``;
    ``FileRejected`` or ``ImportRejected`` when it is refused."""
    digest_ = outcome.revision_digest
    outcome.reinstated = digest_ in held
    contents = {} if outcome.reinstated else {digest_: raw.put(ref, data)}
    before = _results(con, ref.source_key)
    ingest = Ingest(con, raw, now, KernelindexRows.of(con))
    ingest.run(_listing_with(held, ref), contents)
    if ingest.summary.rejected:
        raise FileRejected(ingest.summary.rejected[0])
    if outcome.reinstated:
        outcome.records, outcome.quarantined = held[digest_]["row_count"], held[digest_]["quarantined_count"]
    else:
        (revision,) = ingest.summary.revisions  # the import is the only revision ingested
        outcome.records, outcome.quarantined = revision["rows"], revision["quarantined"]
        outcome.results_added = revision["new_results"]
    sql = "select line_number, reason from quarantined_row where revision_digest = ? order by ordinal"
    outcome.reasons = [f"line {line}: {reason}" for line, reason in con.execute(sql, [digest_]).fetchall()]
    outcome.new_digests = {table: sorted(rows) for table, rows in ingest.dims.new.items() if rows}
    if added := _results(con, ref.source_key) - before:
        outcome.new_digests["fact_result"] = sorted(added)
    if outcome.records == outcome.quarantined:
        first = outcome.reasons[0] if outcome.reasons else "no record"
        raise ImportRejected(
            f"{ref.source_key}: no valid record among {outcome.records} ({_shorten(first)}); nothing was imported"
        )


def _results(con: duckdb.DuckDBPyConnection, key: str) -> set[str]:
    sql = "select result_digest from fact_result where source_key = ?"
    return {d for (d,) in con.execute(sql, [key]).fetchall()}


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
