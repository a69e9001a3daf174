"""Generations: the atomic unit of publishing.

A generation is a JSON manifest listing, per table, the immutable Parquet parts that make it
up. Writers add new parts and stage a manifest; publishing swaps the one-line ``CURRENT``
pointer, so a reader sees the whole previous generation or the whole new one. Unchanged parts
are referenced again rather than rewritten, so a refresh writes only what changed.
"""

from __future__ import annotations

import io
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import file_digest, sha256
from urllib.parse import quote

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock, Timeout

from liger_warehouse.model.tables import SCHEMA_VERSION, SCHEMAS, TABLES, empty
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.storage import Storage, WriteConflict

POINTER = "CURRENT"
# Rows per Parquet row group of a part.
ROW_GROUP_ROWS = 256_000


def part_file(table: str, name: str) -> str:
    """Where the part ``name`` of ``table`` is kept, relative to the warehouse root."""
    return f"tables/{table}/{name}.parquet"


def key_folder(column: str, key: str) -> str:
    """The folder of the parts whose rows all have ``column`` = ``key``: Hive's
    ``column=value``, the value percent-encoded. DuckDB reads such parts as Hive partitions, so a
    query filtering on ``column`` skips every other part without opening it (a run's points out
    of 3,334 parts at 10^7 results)."""
    return f"{column}={quote(key, safe='')}"


class PublishConflict(RuntimeError):
    """Another refresh published first; this one's staged generation is stale."""


class NotStaged(RuntimeError):
    """A generation asked for as staged is not: this warehouse never staged it, or it is published."""


class RefreshBusy(RuntimeError):
    """Another refresh holds the warehouse lock."""


class HeldLock:
    """A lock already acquired. Its ``with`` releases it without acquiring it again: a
    ``FileLock``'s own ``with`` would count a second hold and leave the first one held until
    garbage collection."""

    def __init__(self, lock: FileLock) -> None:
        self.lock = lock

    @property
    def lock_file(self) -> str:
        return self.lock.lock_file

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass
class Part:
    key: str
    file: str
    rows: int


def parts_diff(before: Iterable[Part], after: Iterable[Part]) -> tuple[list[Part], list[Part]]:
    """The parts of ``after`` whose file ``before`` lacks (came) and those of ``before`` whose
    file ``after`` lacks (went), each file once. A part's file is named by its content, so a
    changed part both went and came."""
    held, kept = {p.file: p for p in before}, {p.file: p for p in after}
    return [p for f, p in kept.items() if f not in held], [p for f, p in held.items() if f not in kept]


@dataclass
class ReadersCopy:
    """One file holding the rows of a table's ``covers`` parts, sorted by ``order`` for readers
    (``serve/readers_copy.py``)."""

    file: str
    rows: int
    order: list[str]
    covers: list[Part]

    def beside(self, parts: list[Part]) -> list[Part]:
        """The ``parts`` with rows that it does not cover: written since, read beside it."""
        covered = {p.file for p in self.covers}
        return [p for p in parts if p.file not in covered and p.rows]

    def stale(self, parts: list[Part]) -> list[Part]:
        """The parts it covers that are no longer among ``parts`` (replaced or removed): their
        rows in it are not read."""
        current = {p.file for p in parts}
        return [p for p in self.covers if p.file not in current]


_MANIFEST = msgspec.json.Encoder(order="sorted")


@dataclass
class Generation:
    id: str
    parent: str | None
    created_at: str
    tables: dict[str, list[Part]] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    # The identities its digests follow; a manifest written before versions existed is 1.
    schema_version: int = SCHEMA_VERSION
    # The readers' copies of its tables, by table; a manifest written before them has none.
    readers: dict[str, ReadersCopy] = field(default_factory=dict)

    def parts(self, table: str) -> list[Part]:
        return self.tables.get(table, [])

    def rows(self, table: str) -> int:
        return sum(p.rows for p in self.parts(table))

    def to_json(self) -> str:
        # Sorted keys, one space of indent: for ASCII text what json.dumps(asdict(self),
        # indent=1, sort_keys=True) wrote, about 25 times faster. Every step of a refresh writes
        # the manifest again, and at 1,000 runs it names 9,000 parts (0.16 s by json.dumps).
        return msgspec.json.format(_MANIFEST.encode(self), indent=1).decode()

    @classmethod
    def from_json(cls, text: str) -> Generation:
        # Decoded straight into its parts by msgspec: each step of a refresh loads a manifest
        # or two, and at 1,000 runs one names 9,000 parts.
        m = _MANIFEST_DECODER.decode(text)
        return cls(m.id, m.parent, m.created_at, m.tables, m.summary, m.schema_version, m.readers)


class _Manifest(msgspec.Struct):
    """A generation's manifest as ``Generation.to_json`` writes it."""

    id: str
    parent: str | None
    created_at: str
    tables: dict[str, list[Part]] = {}
    summary: dict = {}
    schema_version: int = 1  # a manifest written before schema versions existed has none
    readers: dict[str, ReadersCopy] = {}


_MANIFEST_DECODER = msgspec.json.Decoder(_Manifest)


def new_generation_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


class GenerationStore:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    @staticmethod
    def _manifest_key(gen_id: str) -> str:
        return f"generations/{gen_id}.json"

    def current_id(self) -> str | None:
        if not self.storage.exists(POINTER):
            return None
        return self.storage.read_text(POINTER).strip() or None

    def load(self, gen_id: str) -> Generation:
        return Generation.from_json(self.storage.read_text(self._manifest_key(gen_id)))

    def current(self) -> Generation:
        """The published generation; an empty one before the first publish."""
        return self._load_or_empty(self.current_id())

    def parent(self, gen: Generation) -> Generation:
        """The generation ``gen`` was built on; an empty one for the first."""
        return self._load_or_empty(gen.parent)

    def _load_or_empty(self, gen_id: str | None) -> Generation:
        if not gen_id:
            return Generation(id="", parent=None, created_at="", tables={t: [] for t in TABLES})
        return self.load(gen_id)

    def stage(self, gen: Generation) -> None:
        self.storage.write_text(self._manifest_key(gen.id), gen.to_json())

    def publish(self, gen: Generation) -> None:
        """Make ``gen`` current, if nobody published since it was built on its parent.

        A local root is guarded by the host's publish lock around the parent check and the
        write. On S3 another host may publish in between, so the write of ``CURRENT`` is
        conditional on the version that was checked (``If-Match`` its ETag, ``If-None-Match``
        on the first publish); a store that ignores the condition is refused before anything
        is written (``ConditionalWritesUnsupported``)."""
        with self.lock("publish"):
            if self.storage.is_local:
                self._check_staged(gen, self.current_id())
                failpoint("publish")
                self.storage.write_text(POINTER, gen.id + "\n")
                return
            self.storage.probe_conditional_writes()
            pointer, version = self.storage.read_versioned(POINTER)
            self._check_staged(gen, pointer.decode("utf-8").strip() if pointer else None)
            failpoint("publish")
            try:
                self.storage.write_if_unchanged(POINTER, (gen.id + "\n").encode("utf-8"), version)
            except WriteConflict:
                raise PublishConflict(
                    f"generation {gen.id} was built on {gen.parent or 'an empty warehouse'}, but "
                    f"another writer of {self.storage.url} published {self.current_id()} meanwhile "
                    "(CURRENT changed under the conditional write); run the refresh again"
                ) from None

    def staged(self, gen_id: str) -> Generation:
        """Staged generation ``gen_id``, still publishable. Refuses one this warehouse never
        staged (``NotStaged``), one already published (``NotStaged``) and one superseded:
        built on a parent that is no longer ``CURRENT`` (``PublishConflict``)."""
        try:
            gen = self.load(gen_id)
        except FileNotFoundError:
            raise NotStaged(f"generation {gen_id} was never staged in {self.storage.url}") from None
        self._check_staged(gen, self.current_id())
        return gen

    def restage(self, gen: Generation) -> None:
        """Stage ``gen`` again with the tables a later step added to it, unless it was published
        or superseded meanwhile.

        Safe to rewrite: a staged manifest is read by no reader until ``CURRENT`` names it, the
        check and the write hold the publish lock that ``publish`` holds around its own check and
        pointer write (so a manifest is never rewritten once published), and the manifest is one
        object written whole. Across hosts (object storage) the run queue runs one writer at a
        time (deploy/dagster.yaml)."""
        with self.lock("publish"):
            self._check_staged(gen, self.current_id())
            self.stage(gen)

    @staticmethod
    def _check_staged(gen: Generation, current: str | None) -> None:
        if current == gen.id:
            raise NotStaged(f"generation {gen.id} is already published (CURRENT names it); stage a new one first")
        if (current or None) != (gen.parent or None):
            raise PublishConflict(
                f"generation {gen.id} was built on {gen.parent or 'an empty warehouse'}, "
                f"but {current} was published meanwhile; run the refresh again"
            )

    def lock(self, name: str, timeout: float = -1) -> FileLock:
        """A host-wide lock on this warehouse, released by the OS if its holder dies."""
        if self.storage.is_local:
            lock_dir = os.path.join(self.storage.root, ".locks")
        else:
            lock_dir = os.path.join(tempfile.gettempdir(), "liger-warehouse-locks")
            name = f"{sha256(self.storage.url.encode()).hexdigest()[:16]}-{name}"
        os.makedirs(lock_dir, exist_ok=True)
        return FileLock(os.path.join(lock_dir, f"{name}.lock"), timeout=timeout)

    def try_lock(self, name: str) -> HeldLock:
        """The lock ``name`` now, or ``RefreshBusy``; ``with`` it (or ``release()``) to let go."""
        lock = self.lock(name, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RefreshBusy(
                f"another refresh of {self.storage.url} is running (lock {lock.lock_file}); wait for it to finish"
            ) from None
        return HeldLock(lock)

    def write_part(self, table: str, key: str, name: str, data: pa.Table) -> Part:
        """Write one immutable Parquet part of ``table``."""
        data = data.cast(SCHEMAS[table])
        buffer = io.BytesIO()
        pq.write_table(data, buffer, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        file = part_file(table, name)
        self.storage.write_bytes(file, buffer.getvalue())
        return Part(key=key, file=file, rows=data.num_rows)

    def write_content_part(self, table: str, data: pa.Table | Iterable[pa.RecordBatch], folder: str = "") -> Part:
        """A whole derived table as one part named by its content: an unchanged table references
        the file it already has, so a refresh that changes nothing it reads writes nothing.

        ``data`` may come in batches of any size (streamed from DuckDB, so that a table of 10^7
        rows is never held whole): it is written one row group of ``ROW_GROUP_ROWS`` rows, in
        one chunk, at a time, so the same rows are the same bytes however they were chunked,
        and the name is a digest of those bytes. The file is spooled to local disk, not held in
        memory (the largest at 10^7 results is close to 1 GB). It is kept in ``folder`` of the
        table's directory when given (``key_folder``)."""
        schema = SCHEMAS[table]
        prefix = f"{folder}/" if folder else ""
        rows = 0
        with self.storage.spooled(part_file(table, f"{prefix}content")) as local:
            with pq.ParquetWriter(local, schema, compression="zstd") as writer:
                for group in _row_groups(data.to_batches() if isinstance(data, pa.Table) else data, schema):
                    writer.write_table(group, row_group_size=ROW_GROUP_ROWS)
                    rows += group.num_rows
            with open(local, "rb") as written:
                digest = file_digest(written, "sha256").hexdigest()
            file = part_file(table, prefix + digest[:32])
            if not self.storage.exists(file):
                self.storage.write_file(file, local)
        return Part(key="all", file=file, rows=rows)

    def read_parts(self, table: str, parts: Iterable[Part], columns: list[str] | None = None) -> pa.Table:
        tables = [self._read(p.file, columns) for p in parts]
        if not tables:
            base = empty(table)
            return base.select(columns) if columns else base
        return pa.concat_tables(tables)

    def read_table(self, gen: Generation, table: str, columns: list[str] | None = None) -> pa.Table:
        return self.read_parts(table, gen.parts(table), columns)

    def _read(self, file: str, columns: list[str] | None) -> pa.Table:
        with self.storage.open(file) as handle:
            return pq.read_table(handle, columns=columns)

    def part_uris(self, gen: Generation, table: str) -> list[str]:
        return [self.storage.uri(p.file) for p in gen.parts(table)]


def _row_groups(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.Table]:
    """The rows of ``batches`` as tables of ``ROW_GROUP_ROWS`` rows (the last may be shorter),
    each in one chunk and cast to ``schema``."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        while count >= ROW_GROUP_ROWS:
            rows = pa.Table.from_batches(held).cast(schema)
            yield rows.slice(0, ROW_GROUP_ROWS).combine_chunks()
            held = rows.slice(ROW_GROUP_ROWS).to_batches()
            count -= ROW_GROUP_ROWS
    if count:
        yield pa.Table.from_batches(held).cast(schema).combine_chunks()
