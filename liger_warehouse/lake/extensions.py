"""DuckDB's extensions, loaded from their pip packages when installed, else from DuckDB's own
extension directory (``INSTALL``, for a user with internet and another DuckDB version).

Loading from the package writes nothing: a reading command creates no file, and a machine that
reaches no extension repository still opens the lake. Written by hand because
``duckdb_extensions.import_extension`` installs into ``~/.duckdb`` (a write) first.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import duckdb

# The extension each catalog or data location needs besides ducklake itself.
PACKAGES = {
    "ducklake": "duckdb_extension_ducklake",
    "sqlite_scanner": "duckdb_extension_sqlite_scanner",
    "postgres_scanner": "duckdb_extension_postgres_scanner",
    "httpfs": "duckdb_extension_httpfs",
}


@cache
def packaged(name: str) -> Path | None:
    """The extension file the pip package of ``name`` ships for this DuckDB version, if any
    (looked up once per process: every connection asks, twice)."""
    spec = importlib.util.find_spec(PACKAGES[name])
    if spec is None or not spec.submodule_search_locations:
        return None
    file = (
        Path(spec.submodule_search_locations[0]) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    )
    return file if file.is_file() else None


def connect_config(names: list[str]) -> dict[str, str]:
    """Settings a connection that will load ``names`` is opened with. When every one comes from
    its package, DuckDB's signature check is skipped: it hashes each 35 MB file on every
    connection (about 0.15 s for a lake), and the file sits in the same environment as this code,
    which anyone able to swap it could change as well."""
    if all(packaged(name) is not None for name in names):
        return {"allow_unsigned_extensions": "true"}
    return {}


def load(con: duckdb.DuckDBPyConnection, names: list[str]) -> None:
    """Load ``names`` into ``con``: each from its package, else installed by DuckDB."""
    loaded = {row[0] for row in con.execute("select extension_name from duckdb_extensions() where loaded").fetchall()}
    for name in names:
        if name in loaded:
            continue
        file = packaged(name)
        if file is not None:
            con.execute(f"load '{file}'")
        else:
            con.execute(f"install {name}")
            con.execute(f"load {name}")
