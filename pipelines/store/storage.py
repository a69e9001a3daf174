"""A warehouse root on a local disk or an object store, with atomic whole-object writes.

Every write replaces a whole object at once: locally through a temporary file and
``os.replace``; on an object store a PUT is already atomic. Nothing is ever appended to, so a
killed process leaves at worst an orphaned temporary file, never a half-written object.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import fsspec
from fsspec.implementations.local import LocalFileSystem

from pipelines.failpoints import failpoint
from pipelines.store.objectstore import storage_options as default_storage_options


class Storage:
    """Keys are ``/``-separated paths relative to the warehouse root."""

    def __init__(self, root: str | os.PathLike[str], storage_options: dict | None = None) -> None:
        root = str(root)
        self.is_local = "://" not in root or root.startswith("file://")
        if self.is_local:
            root = str(Path(root.removeprefix("file://")).expanduser().resolve())
        elif storage_options is None:
            storage_options = default_storage_options(root)
        self.fs, self.root = fsspec.core.url_to_fs(root, **(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.url = root.rstrip("/")

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

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write ``key`` whole; readers see the old object or the new one, never a mix."""
        path = self._path(key)
        if not isinstance(self.fs, LocalFileSystem):
            self.fs.pipe_file(path, data)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        failpoint(f"storage-replace:{key.split('/', 1)[0]}")
        os.replace(tmp, path)

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
