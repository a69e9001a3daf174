"""The filesystem DuckDB reads an object-store warehouse root through: every part downloaded
once into a local cache. Its own module, so that opening a local root never imports fsspec."""

from __future__ import annotations

import io
import os
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

from fsspec import AbstractFileSystem


class ImmutableReadCache(AbstractFileSystem):
    """The filesystem DuckDB reads an object-store root through.

    Every Parquet part is immutable (its name carries the generation id or its content digest
    and it is never rewritten), so a part is downloaded whole once into a local directory and
    read from disk after that. Without it each query re-opens every part over the network
    through Python (a HEAD plus range GETs per open, thousands per audit). Anything else
    passes through uncached. Read-only: DuckDB never writes to the warehouse.
    """

    cachable = False  # one per root and cache directory; never shared through fsspec's cache

    def __init__(self, fs: AbstractFileSystem, root: str, cache: Path) -> None:
        super().__init__()
        self.protocol = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
        self.target = fs
        self.prefix = root.rstrip("/") + "/tables/"
        self.cache = cache

    def _local_copy(self, path: str) -> str | None:
        """The local copy of an immutable part (downloaded on first use), else None."""
        path = self.target._strip_protocol(path)
        if not (path.startswith(self.prefix) and path.endswith(".parquet")):
            return None
        local = self.cache / path[len(self.prefix) :]
        if not local.exists():
            local.parent.mkdir(parents=True, exist_ok=True)
            tmp = local.with_name(f"{local.name}.tmp-{uuid.uuid4().hex}")
            try:
                self.target.get_file(path, str(tmp))
                os.replace(tmp, local)
            finally:
                tmp.unlink(missing_ok=True)
        return str(local)

    def _open(self, path: str, mode: str = "rb", **kwargs):
        if mode != "rb":
            raise PermissionError(f"{path}: the warehouse is read-only to DuckDB")
        local = self._local_copy(path)
        return PositionalFile(local) if local else self.target.open(path, "rb")

    def info(self, path: str, **kwargs) -> dict:
        local = self._local_copy(path)
        if local is None:
            return self.target.info(path, **kwargs)
        return {"name": self.target._strip_protocol(path), "size": os.path.getsize(local), "type": "file"}

    def modified(self, path: str):
        local = self._local_copy(path)
        if local is None:
            return self.target.modified(path)
        return datetime.fromtimestamp(os.path.getmtime(local), UTC)

    def ls(self, path: str, detail: bool = True, **kwargs):
        return self.target.ls(path, detail=detail, **kwargs)


class PositionalFile(io.RawIOBase):
    """A local file read-only, with a read position per thread.

    DuckDB's Python filesystem reads a handle as a ``seek`` and then a ``read``, taking the GIL
    for each, and its Parquet scan reads one handle from several threads: with one shared
    position, another thread's seek can fall between the two and the read returns the wrong
    bytes (DuckDB then fails with "invalid TType" or "don't know what type"). Each thread's own
    position, and ``os.pread``, keep every read where its own seek put it."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_RDONLY)
        self._size = os.fstat(self._fd).st_size
        self._position = threading.local()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return getattr(self._position, "at", 0)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.tell(), io.SEEK_END: self._size}[whence]
        self._position.at = base + offset
        return self._position.at

    def readinto(self, buffer: bytearray | memoryview) -> int:
        data = os.pread(self._fd, len(buffer), self.tell())
        buffer[: len(data)] = data
        self._position.at = self.tell() + len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()
