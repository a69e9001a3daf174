"""A warehouse root on a local disk or an object store (the raw snapshots, exports, reports),
with atomic whole-object writes.

Every write replaces a whole object at once: locally through a temporary file and
``os.replace``; on an object store a PUT is already atomic. Nothing is ever appended to, so a
killed process leaves at worst an orphaned temporary file, never a half-written object. The
lake's own files are DuckLake's (liger_warehouse/lake/).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.objectstore import storage_options as default_storage_options

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


class Storage:
    """Keys are ``/``-separated paths relative to the warehouse root."""

    def __init__(self, root: str | os.PathLike[str], storage_options: dict | None = None) -> None:
        root = str(root)
        self.is_local = "://" not in root or root.startswith("file://")
        if self.is_local:
            self.root = self.url = str(Path(root.removeprefix("file://")).expanduser().resolve())
            return
        import fsspec

        options = default_storage_options(root) if storage_options is None else storage_options
        self.fs, path = fsspec.core.url_to_fs(root, **options)
        self.root, self.url = path.rstrip("/"), root.rstrip("/")

    @cached_property
    def fs(self) -> AbstractFileSystem:
        """A local root's filesystem, made when first used: a command that only reads the lake
        never imports fsspec (an object-store root's is made with the root)."""
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem()

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def uri(self, key: str) -> str:
        """The address a reader such as DuckDB uses for ``key``."""
        return f"{self.url}/{key}"

    def exists(self, key: str) -> bool:
        return self.fs.exists(self._path(key))

    def read_bytes(self, key: str) -> bytes:
        return self.fs.cat_file(self._path(key))

    def read_text(self, key: str) -> str:
        return self.read_bytes(key).decode("utf-8")

    def open(self, key: str) -> BinaryIO:
        """``key`` for reading, without fetching it whole (Parquet reads only the columns asked)."""
        return self.fs.open(self._path(key), "rb")

    def write_bytes(self, key: str, data: bytes | memoryview) -> None:
        """Write ``key`` whole; readers see the old object or the new one, never a mix. A local
        root writes a ``memoryview`` (a large part's buffer) without copying it."""
        if not self.is_local:
            self.fs.pipe_file(self._path(key), bytes(data))
            return
        with self.spooled(key) as local:
            with open(local, "wb") as out:
                out.write(data)
            self.write_file(key, local)

    @contextmanager
    def spooled(self, key: str) -> Iterator[str]:
        """A local file to write an object's bytes to before ``write_file`` puts them at a key
        under ``key``'s directory (a large part is never held in memory): beside it under a local
        root, so it moves into place by a rename; in the system's temporary directory otherwise.
        Removed on exit if it is still there."""
        if self.is_local:
            path = self._path(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            local = f"{path}.tmp-{uuid.uuid4().hex}"
        else:
            handle, local = tempfile.mkstemp(suffix=".tmp")
            os.close(handle)
        try:
            yield local
        finally:
            if os.path.exists(local):
                os.remove(local)

    def write_file(self, key: str, local: str) -> None:
        """Put the finished file ``local`` (from ``spooled``) at ``key``, as ``write_bytes``
        would put its bytes: readers see the old object or the new one, never a mix."""
        if not self.is_local:
            # streamed in chunks (a multipart upload): the object appears whole when it completes
            with open(local, "rb") as source, self.fs.open(self._path(key), "wb") as target:
                shutil.copyfileobj(source, target, 8 << 20)
            return
        with open(local, "rb") as written:
            os.fsync(written.fileno())
        failpoint(f"storage-replace:{key.split('/', 1)[0]}")
        os.replace(local, self._path(key))

    def write_text(self, key: str, text: str) -> None:
        self.write_bytes(key, text.encode("utf-8"))

    def delete(self, key: str) -> None:
        if self.exists(key):
            self.fs.rm_file(self._path(key))

    def list(self, prefix: str) -> list[str]:
        """Keys under ``prefix`` (recursive), without temporary files."""
        base = self._path(prefix)
        if not self.fs.exists(base):
            return []
        found = self.fs.find(base)
        keys = [p[len(self.root) + 1 :] for p in found]
        return sorted(k for k in keys if ".tmp-" not in k)

    def size(self, key: str) -> int:
        return int(self.fs.size(self._path(key)))


class PendingWrites(Storage):
    """A root as it reads, with every write held in memory instead of written.

    A change is worked out against it, then either committed whole (``commit``) or dropped: a
    dry run writes nothing, and a change that is refused leaves nothing behind."""

    def __init__(self, base: Storage) -> None:  # shares the base root's filesystem
        self.base = base
        self.is_local, self.fs, self.root, self.url = base.is_local, base.fs, base.root, base.url
        self.written: dict[str, bytes] = {}

    def exists(self, key: str) -> bool:
        return key in self.written or self.base.exists(key)

    def read_bytes(self, key: str) -> bytes:
        return self.written[key] if key in self.written else self.base.read_bytes(key)

    def open(self, key: str) -> BinaryIO:
        return io.BytesIO(self.written[key]) if key in self.written else self.base.open(key)

    def write_bytes(self, key: str, data: bytes | memoryview) -> None:
        self.written[key] = bytes(data)

    def delete(self, key: str) -> None:
        raise NotImplementedError("pending writes never delete")

    def list(self, prefix: str) -> list[str]:
        mine = [k for k in self.written if k == prefix or k.startswith(prefix.rstrip("/") + "/")]
        return sorted({*self.base.list(prefix), *mine})

    def size(self, key: str) -> int:
        return len(self.written[key]) if key in self.written else self.base.size(key)

    def commit(self) -> None:
        """Write everything held to the base root."""
        for key in sorted(self.written):
            self.base.write_bytes(key, self.written[key])
        self.written.clear()
