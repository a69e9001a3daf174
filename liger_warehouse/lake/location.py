"""Where a lake lives: its DuckLake catalog and its data path.

By default both sit in the warehouse root, beside the raw store: ``<root>/catalog.sqlite`` and
``<root>/lake/``. ``LIGER_WAREHOUSE_CATALOG`` (``sqlite:PATH``, ``postgres:dbname=… host=…``) and
``LIGER_WAREHOUSE_DATA`` (a directory or ``s3://…``) move them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CATALOG_FILE = "catalog.sqlite"
DATA_DIR = "lake"
ALIAS = "liger"
OBJECT_STORES = ("s3://", "gs://", "az://")


class NoWarehouse(FileNotFoundError):
    """A reader asked for a lake that was never published."""


@dataclass(frozen=True)
class Lake:
    """A DuckLake catalog string and the data path its files live under."""

    catalog: str
    data: str

    @classmethod
    def of(cls, root: str, catalog: str | None = None, data: str | None = None) -> Lake:
        """The lake of warehouse ``root``, unless ``catalog`` or ``data`` move it."""
        local = not root.startswith(OBJECT_STORES)
        base = str(Path(root).resolve()) if local else root.rstrip("/")
        if catalog is None and not local:
            raise ValueError(
                f"the warehouse root {root} is in an object store, where a SQLite catalog cannot live: "
                "set LIGER_WAREHOUSE_CATALOG (--catalog) to sqlite:LOCAL_PATH or postgres:…"
            )
        if (
            catalog is not None
            and catalog.startswith("sqlite:")
            and catalog.removeprefix("sqlite:").startswith(OBJECT_STORES)
        ):
            raise ValueError(f"catalog {catalog}: a SQLite catalog must be a local file (LIGER_WAREHOUSE_CATALOG)")
        catalog = catalog or f"sqlite:{base}/{CATALOG_FILE}"
        data = data or f"{base}/{DATA_DIR}/"
        if catalog.startswith("sqlite:"):
            catalog = "sqlite:" + str(Path(catalog.removeprefix("sqlite:")).expanduser().resolve())
        if not data.startswith(OBJECT_STORES):
            data = str(Path(data).expanduser().resolve()) + "/"
        return cls(catalog, data if data.endswith("/") else data + "/")

    @property
    def kind(self) -> str:
        return self.catalog.split(":", 1)[0]

    @property
    def catalog_file(self) -> Path | None:
        """The SQLite catalog's file; None for PostgreSQL."""
        return Path(self.catalog.removeprefix("sqlite:")) if self.kind == "sqlite" else None

    @property
    def data_is_local(self) -> bool:
        return not self.data.startswith(OBJECT_STORES)

    def extensions(self) -> list[str]:
        scanner = {"sqlite": "sqlite_scanner", "postgres": "postgres_scanner"}.get(self.kind)
        if scanner is None:
            raise ValueError(f"unsupported DuckLake catalog {self.catalog!r}: use sqlite:PATH or postgres:…")
        return ["ducklake", scanner, *([] if self.data_is_local else ["httpfs"])]

    def exists(self) -> bool:
        """Whether a catalog may be there: a SQLite file that exists, or any PostgreSQL one."""
        file = self.catalog_file
        return file is None or file.is_file()

    def attach_sql(
        self, read_only: bool, snapshot: int | None = None, at_time: str | None = None, wait_ms: int | None = None
    ) -> str:
        """``ATTACH`` of the lake as ``liger``; the data path always overrides the one stored in
        the catalog, so a copied or moved warehouse reads its own files. ``wait_ms``: how long a
        SQLite catalog waits for a lock (PostgreSQL orders its own)."""
        options = [f"data_path {_quote(self.data)}", "override_data_path true"]
        if read_only:
            options.append("read_only")
        if self.kind == "sqlite" and wait_ms is not None:
            options.append(f"meta_busy_timeout {int(wait_ms)}")
        if snapshot is not None:
            options.append(f"snapshot_version {int(snapshot)}")
        if at_time is not None:
            options.append(f"snapshot_time {_quote(at_time)}")
        return f"attach {_quote('ducklake:' + self.catalog)} as {ALIAS} ({', '.join(options)})"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def configured(root: str | None = None, catalog: str | None = None, data: str | None = None) -> Lake:
    """The lake the settings name, unless the arguments (the CLI's options) say otherwise."""
    from liger_warehouse import settings

    s = settings.current()
    return Lake.of(root or s.dir, catalog or s.catalog, data or s.data)
