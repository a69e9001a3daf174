"""Write kernelindex records as NDJSON: one compact JSON object per line, UTF-8, ``\\n`` ends.

Records stream from DuckDB batch by batch into the output; every record is validated against
``kernelindex.schema.json`` on the way (the compiled validator makes that cheap), and the first
invalid one stops the export before the output replaces anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

import duckdb
import orjson

from liger_warehouse.export.kernelindex import kernelindex_record
from liger_warehouse.export.record_schema import validate_record
from liger_warehouse.export.records import ResultFilter, connect, count_results, iter_results
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.storage import Storage

EXPORT_DIR = "exports/kernelindex"
# Exports are derived: each is rebuilt from its snapshot on demand, so only the newest few
# are kept (one is ~150 MB over the mirror's history).
KEEP_EXPORTS = 3


class InvalidRecord(ValueError):
    """An exported record failed the schema: a bug in the export rules, never the data's fault."""


@dataclass
class ExportStats:
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    sha256: str = ""
    validated: int = 0
    by_metric: dict[str, int] = field(default_factory=dict)

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


def write_records(
    con: duckdb.DuckDBPyConnection, filt: ResultFilter, out: BinaryIO, validate: bool = True
) -> ExportStats:
    """Write the records of the filtered results to ``out``, in ``result_digest`` order."""
    stats, hasher, started = ExportStats(), hashlib.sha256(), time.perf_counter()
    for rows in iter_results(con, filt):
        lines = [_line(row, validate) for row in rows]
        chunk = b"".join(lines)
        out.write(chunk)
        hasher.update(chunk)
        stats.records += len(lines)
        stats.bytes += len(chunk)
        for row in rows:
            stats.by_metric[row["metric"]] = stats.by_metric.get(row["metric"], 0) + 1
    stats.validated = stats.records if validate else 0
    stats.seconds = time.perf_counter() - started
    stats.sha256 = "sha256:" + hasher.hexdigest()
    return stats


def _line(row: dict, validate: bool) -> bytes:
    try:
        record = kernelindex_record(row)
    except ValueError as exc:
        raise ValueError(f"result {row['result_digest']}: {exc}") from None
    if validate and (errors := validate_record(record)):
        raise InvalidRecord(f"result {row['result_digest']}: record fails the schema: {errors[:3]}")
    return orjson.dumps(record) + b"\n"


@contextmanager
def atomic_output(storage: Storage, key: str) -> Iterator[BinaryIO]:
    """A binary stream that becomes ``key`` whole when the block ends, or not at all on error."""
    path = f"{storage.root}/{key}"
    if not storage.is_local:
        # An object-store PUT (multipart included) only appears once it completes.
        out = storage.fs.open(path, "wb")
        try:
            yield out
        except BaseException:
            _abandon(storage, out, path)
            raise
        out.close()
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _abandon(storage: Storage, out: BinaryIO, path: str) -> None:
    discard = getattr(out, "discard", None)  # s3fs and gcsfs: abort the multipart upload
    if discard is not None:
        discard()
        return
    out.close()
    storage.fs.rm_file(path)


def snapshot_key(snapshot: int) -> str:
    """Where the ``kernelindex_export`` asset keeps the export of one lake snapshot."""
    return f"{EXPORT_DIR}/{snapshot}.ndjson"


def prune_exports(storage: Storage, keep: int = KEEP_EXPORTS) -> list[str]:
    """Delete all but the exports of the newest ``keep`` snapshots; returns the keys deleted."""
    exports = {n: k for k in storage.list(EXPORT_DIR) if (n := _snapshot_of(k)) is not None}
    # Snapshot ids are integers: 10 is newer than 9, though "10.ndjson" sorts first.
    newest_first = [exports[n] for n in sorted(exports, reverse=True)]
    stale = newest_first[keep:]
    for key in stale:
        storage.delete(key)
        storage.delete(key.removesuffix(".ndjson") + ".json")
    return stale


def _snapshot_of(key: str) -> int | None:
    """The snapshot whose export ``key`` is; None for any other file."""
    name = key.rsplit("/", 1)[-1]
    stem = name.removesuffix(".ndjson")
    return int(stem) if name.endswith(".ndjson") and stem.isdigit() else None


def export_snapshot(lake: Lake, storage: Storage, snapshot: int) -> tuple[str, ExportStats]:
    """Write every result of lake snapshot ``snapshot`` to ``exports/kernelindex/<snapshot>.ndjson``.

    A snapshot never changes, so its export is named by it: readers see which state the
    records (and their digests) describe, and a new export never overwrites one being read.
    A sidecar ``<snapshot>.json`` holds the counts and the SHA-256 of the file.
    """
    key = snapshot_key(snapshot)
    con = connect(lake, as_of=str(snapshot))
    try:
        expected = count_results(con, ResultFilter())
        with atomic_output(storage, key) as out:
            stats = write_records(con, ResultFilter(), out)
            total = con.sql("select count(*) from fact_result").fetchall()[0][0]
            if not stats.records == expected == total:
                # Leaving the block by an exception keeps the partial file from replacing anything.
                raise InvalidRecord(f"exported {stats.records} records, fact_result has {total} rows")
    finally:
        con.close()
    sidecar = {"snapshot": snapshot, "records": stats.records, "validated": stats.validated}
    sidecar |= {"bytes": stats.bytes, "sha256": stats.sha256, "by_metric": stats.by_metric}
    storage.write_text(key.removesuffix(".ndjson") + ".json", json.dumps(sidecar, indent=1))
    return key, stats


def existing_export(storage: Storage, snapshot: int) -> dict | None:
    """The sidecar of this snapshot's export when both files are there, else None."""
    key = snapshot_key(snapshot)
    sidecar = key.removesuffix(".ndjson") + ".json"
    if not (storage.exists(key) and storage.exists(sidecar)):
        return None
    return json.loads(storage.read_text(sidecar))
