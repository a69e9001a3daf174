"""Raw upstream snapshots: immutable, content-addressed, gzip-compressed.

A snapshot is stored once under the SHA-256 of its bytes. A small index entry per upstream
revision records which snapshot holds that revision's file, so a refresh knows what it has
already downloaded even when an earlier refresh died before publishing.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict

from liger_warehouse.model.digests import content_digest, digest, hex_part
from liger_warehouse.model.revisions import RevisionRef
from liger_warehouse.store.storage import Storage

MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024


class SnapshotTooLarge(ValueError):
    pass


def bounded_gunzip(data: bytes, limit: int, name: str) -> bytes:
    """Decompress ``data``, refusing output beyond ``limit`` bytes (gzip bombs)."""
    out = bytearray()
    with gzip.GzipFile(fileobj=_Reader(data)) as stream:
        while chunk := stream.read(1 << 20):
            out += chunk
            if len(out) > limit:
                raise SnapshotTooLarge(f"{name}: decompresses to more than {limit} bytes")
    return bytes(out)


class _Reader:
    """A minimal file object over bytes (``io.BytesIO`` would copy)."""

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n < 0 else min(self._pos + n, len(self._view))
        chunk = self._view[self._pos : end].tobytes()
        self._pos = end
        return chunk


class RawStore:
    def __init__(self, storage: Storage, max_bytes: int = MAX_SNAPSHOT_BYTES) -> None:
        self.storage = storage
        self.max_bytes = max_bytes

    @staticmethod
    def _snapshot_key(digest_value: str) -> str:
        hexd = hex_part(digest_value)
        return f"raw/sha256/{hexd[:2]}/{hexd}.gz"

    @staticmethod
    def _index_key(ref: RevisionRef) -> str:
        return f"raw/index/{hex_part(digest(ref.identity()))}.json"

    def put(self, ref: RevisionRef, data: bytes) -> str:
        """Store ``data`` as the file of ``ref``; returns its content digest."""
        value = content_digest(data)
        key = self._snapshot_key(value)
        if not self.storage.exists(key):
            # Level 1: a full build compresses every upstream byte once, and level 6 costs about
            # four times the CPU for a snapshot a fifth smaller.
            self.storage.write_bytes(key, gzip.compress(data, compresslevel=1, mtime=0))
        entry = {"content_digest": value, "size": len(data), "revision": asdict(ref)}
        self.storage.write_text(self._index_key(ref), json.dumps(entry, sort_keys=True))
        return value

    def lookup(self, ref: RevisionRef) -> str | None:
        """The content digest stored for ``ref``, or None when it was never fetched."""
        key = self._index_key(ref)
        if not self.storage.exists(key):
            return None
        return json.loads(self.storage.read_text(key))["content_digest"]

    @staticmethod
    def compare_key(pair: str) -> str:
        """Where the compare of ``pair`` is kept (what a warning about it names)."""
        return f"raw/compare/{pair}.json.gz"

    def has_compare(self, pair: str) -> bool:
        """Whether the compare of ``pair`` (``<base>...<head>``) is stored."""
        return self.storage.exists(self.compare_key(pair))

    def put_compare(self, pair: str, data: bytes) -> None:
        """Keep the compare of ``pair`` for good: a compare of two commits never changes."""
        self.storage.write_bytes(self.compare_key(pair), gzip.compress(data, compresslevel=6, mtime=0))

    def get_compare(self, pair: str) -> bytes | None:
        """The stored compare of ``pair``, or None when it was never had."""
        key = self.compare_key(pair)
        if not self.storage.exists(key):
            return None
        return bounded_gunzip(self.storage.read_bytes(key), self.max_bytes, key)

    def get(self, content: str) -> bytes:
        """The bytes of a snapshot, checked against its address."""
        data = bounded_gunzip(self.storage.read_bytes(self._snapshot_key(content)), self.max_bytes, content)
        if content_digest(data) != content:
            raise ValueError(f"raw snapshot {content} is corrupt: its bytes hash differently")
        return data
