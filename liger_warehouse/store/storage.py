"""A warehouse root on a local disk or an object store, with atomic whole-object writes.

Every write replaces a whole object at once: locally through a temporary file and
``os.replace``; on an object store a PUT is already atomic. Nothing is ever appended to, so a
killed process leaves at worst an orphaned temporary file, never a half-written object.

On S3 an object can also be written only if it is unchanged since it was read (a conditional
PUT: ``If-Match`` its ETag, or ``If-None-Match: *`` while it does not exist), which is what
lets several hosts publish to one root without a shared lock (``GenerationStore.publish``).
"""

from __future__ import annotations

import hashlib
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
from liger_warehouse.store.objectstore import S3_PROTOCOLS, protocol
from liger_warehouse.store.objectstore import storage_options as default_storage_options

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

# Written and conditionally rewritten to learn whether the store honours conditional writes.
CONDITIONAL_WRITE_PROBE = "state/conditional-write-probe"
# S3 error codes of a conditional write whose condition did not hold.
_CONDITION_FAILED = {"PreconditionFailed", "ConditionalRequestConflict"}
# Roots whose store refused a failing conditional write, probed once per process.
_honours_conditions: set[str] = set()


class WriteConflict(RuntimeError):
    """A conditional write was refused: the object changed since it was read."""


class ConditionalWritesUnsupported(RuntimeError):
    """The store cannot write an object only if it is unchanged, so nothing was written."""


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
        """A local root's filesystem, made when first used: a command that only opens liger.duckdb
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

    # -- conditional writes (object stores) ----------------------------------------------

    def read_versioned(self, key: str) -> tuple[bytes | None, str | None]:
        """``key`` and the version a conditional write names (its ETag); (None, None) if absent.

        The version is read before the bytes: if the object changes in between, a write
        conditional on that version is refused rather than applied over the newer object."""
        self._require_conditional_writes()
        try:
            version = self.fs.info(self._path(key))["ETag"]
        except FileNotFoundError:
            return None, None
        return self.read_bytes(key), version

    def write_if_unchanged(self, key: str, data: bytes, version: str | None) -> None:
        """Write ``key`` whole only if it is still at ``version`` (None: only if it does not
        exist yet); otherwise raise ``WriteConflict`` and write nothing."""
        self._require_conditional_writes()
        condition = {"IfMatch": version} if version else {"IfNoneMatch": "*"}
        try:
            self.fs.pipe_file(self._path(key), data, **condition)
        except OSError as exc:  # s3fs turns the 412 into FileExistsError or OSError(EINVAL)
            if not _condition_failed(exc, version):
                raise
            raise WriteConflict(f"{self.uri(key)} changed since it was read") from None

    def probe_conditional_writes(self) -> None:
        """Raise ``ConditionalWritesUnsupported`` unless the store refuses conditional writes
        whose condition fails: a wrong ETag (``If-Match``) and an existing object
        (``If-None-Match: *``). Stores that ignore the headers would let two hosts publish."""
        self._require_conditional_writes()
        if self.url in _honours_conditions:
            return
        self.write_bytes(CONDITIONAL_WRITE_PROBE, b"probe\n")
        wrong = '"' + hashlib.md5(b"not the probe", usedforsecurity=False).hexdigest() + '"'
        for version, header in ((wrong, "If-Match"), (None, "If-None-Match")):
            try:
                self.write_if_unchanged(CONDITIONAL_WRITE_PROBE, b"probe\n", version)
            except WriteConflict:
                continue
            raise ConditionalWritesUnsupported(
                f"{self.url}: the object store applied a PUT whose {header} condition failed, so it "
                "cannot guarantee that two hosts never both publish; nothing was published. "
                "Use a store with conditional writes (AWS S3, MinIO, Cloudflare R2)."
            )
        _honours_conditions.add(self.url)

    def _require_conditional_writes(self) -> None:
        if protocol(self.url) not in S3_PROTOCOLS:
            raise ConditionalWritesUnsupported(
                f"{self.url}: conditional writes are implemented for S3 only; nothing was published"
            )

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


def _condition_failed(exc: OSError, version: str | None) -> bool:
    """Whether ``exc`` is the store refusing a conditional write (412, or 409 for a conditional
    write racing another; If-Match on an object that is gone is a 404)."""
    if isinstance(exc, FileExistsError):
        return True
    if isinstance(exc, FileNotFoundError):
        return version is not None
    response = getattr(exc.__cause__, "response", None) or {}
    return response.get("Error", {}).get("Code") in _CONDITION_FAILED


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
        """Write everything held to the base root, manifests last: a manifest is written only
        once every part and snapshot it can name is in place."""
        for key in sorted(self.written, key=lambda k: k.startswith("generations/")):
            self.base.write_bytes(key, self.written[key])
        self.written.clear()
