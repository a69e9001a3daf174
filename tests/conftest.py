"""Shared fixtures: the upstream mirror, a fake GitHub serving it, and refreshes through the real job."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import dagster as dg
import pytest
from filelock import FileLock

from liger_warehouse.settings import DUCKDB_THREADS
from tests.expected import Mirror, canonical_config, read_mirror
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views

TESTS = Path(__file__).resolve().parent
# The committed cut of the upstream mirror (tests/fixtures/README.md): every default test reads it,
# so a fresh clone runs the same tests CI does.
MIRROR = TESTS / "fixtures" / "liger-kernel"
# The same cut of the oldest revisions (a few kilobytes each): tests/reliability/upstreams.py's.
OLDEST_MIRROR = TESTS / "fixtures" / "liger-kernel-oldest"
# ../shared beside the checkout holds the whole snapshot that the larger tier reads.
# LIGER_TESTS_SHARED moves it; pointing it nowhere runs the suite as a fresh clone sees it.
SHARED = Path(os.environ.get("LIGER_TESTS_SHARED") or TESTS.parents[1] / "shared")
FULL_MIRROR = SHARED / "upstream" / "liger-kernel"
REFERENCE = SHARED / "spec" / "kernelindex-v1alpha1-embedding-full.json"
FAST_RETRIES = {"LIGER_WAREHOUSE_BACKOFF_SECONDS": "0.01", "LIGER_WAREHOUSE_TIMEOUT_SECONDS": "2"}
# Every refresh and query of the suite, in process or in a subprocess, runs DuckDB on one thread:
# the suite runs several workers on a few cores, where DuckDB's threads only contend (a refresh of
# the fixture cut takes the same time and 15% less CPU). test_warehouse_core.py checks that a lake
# built on every core holds the same rows.
os.environ.setdefault(DUCKDB_THREADS, "1")


def require_mirror() -> Path:
    """The committed fixture cut; always there."""
    return MIRROR


def require_full_mirror() -> Path:
    """The whole snapshot, for the larger tier: tests of figures only it holds."""
    if not FULL_MIRROR.is_dir():
        pytest.skip(f"the whole upstream mirror is absent ({FULL_MIRROR}); CI provides ../shared")
    return FULL_MIRROR


def require_reference() -> dict:
    """The kernelindex record of ../shared/spec (its digests are not published anywhere else)."""
    if not REFERENCE.is_file():
        pytest.skip(f"the reference record is absent ({REFERENCE}); CI provides ../shared")
    return json.loads(REFERENCE.read_text())


@contextmanager
def env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class Refreshed:
    root: Path
    result: dg.ExecuteInProcessResult | None
    outputs: dg.ExecuteInProcessResult | None = None

    @property
    def database(self) -> Path:
        """The lake's catalog (its data is in ``<root>/lake/``)."""
        return self.root / "catalog.sqlite"


def refresh(
    root: Path, fake: FakeGitHub | None = None, upstream: str | None = None, job: str = "refresh", **extra: str
) -> Refreshed:
    """One run of a real job (``refresh`` by default), against a fake GitHub or a mirror directory."""
    from pipelines.definitions import load

    settings = {
        "LIGER_WAREHOUSE_DIR": str(root),
        "LIGER_WAREHOUSE_UPSTREAM": upstream or "github:linkedin/Liger-Kernel",
        "LIGER_WAREHOUSE_GITHUB_API": fake.api_base if fake else None,
        "LIGER_WAREHOUSE_GITHUB_RAW": fake.raw_base if fake else None,
        **FAST_RETRIES,
        **extra,
    }
    with env(**settings), dg.DagsterInstance.ephemeral() as instance:
        result = load().resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False)
    return Refreshed(root, result)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than there are cores (``-n auto``; ``--maxprocesses`` still caps it): the
    end-to-end tests spend part of their time waiting on servers, daemons and subprocesses. On 2
    cores, 2026-12-07, the whole suite took 854 s with 2 workers, 814 s with 3 and 902 s with 4
    (a fourth builds the reference warehouse of the fixture cut once more, and they contend)."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a `slow` test run first. xdist hands out whole files (``--dist loadfile``,
    ``--no-loadscope-reorder``) in this order, so the longest start at once instead of forming
    the tail of a run on two cores."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture(scope="session")
def mirror() -> Mirror:
    """The fixture cut as tests/expected.py reads it (csv + gzip, nothing from the project)."""
    return read_mirror(require_mirror())


@pytest.fixture(scope="session")
def full_mirror() -> Mirror:
    return read_mirror(require_full_mirror())


@pytest.fixture(scope="session")
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub(require_mirror()) as fake:
        yield fake


@pytest.fixture(scope="session")
def full_fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub(require_full_mirror()) as fake:
        yield fake


def reference_warehouse(root: Path, fake: FakeGitHub) -> Refreshed:
    """A warehouse built from all ``fake`` serves over loopback HTTP, then the outputs job."""
    built = refresh(root, fake)
    assert built.result.success, "the reference refresh failed"
    built.outputs = refresh(built.root, fake, job="outputs").result
    assert built.outputs.success, "the outputs job after the reference refresh failed"
    return built


@pytest.fixture(scope="session")
def mirror_warehouse(tmp_path_factory: pytest.TempPathFactory, fake_github: FakeGitHub) -> Refreshed:
    """The warehouse built once from the fixture cut; tests must not modify it."""
    return reference_warehouse(tmp_path_factory.mktemp("warehouse"), fake_github)


@pytest.fixture(scope="session")
def full_mirror_warehouse(
    tmp_path_factory: pytest.TempPathFactory, full_fake_github: FakeGitHub, worker_id: str
) -> Refreshed:
    """The warehouse built once from the whole snapshot, for the larger tier; tests must not modify
    it. Under xdist the first worker to ask builds it in the run's directory and the others wait
    and read it (a build costs a minute of a core), so it carries no Dagster results."""
    if worker_id == "master":
        return reference_warehouse(tmp_path_factory.mktemp("full-warehouse"), full_fake_github)
    run_dir = tmp_path_factory.getbasetemp().parent  # pytest-N, above each worker's popen-gwK
    root, built = run_dir / "full-warehouse", run_dir / "full-warehouse.built"
    with FileLock(run_dir / "full-warehouse.lock"):
        if not built.exists():  # a worker whose build failed may have left part of one
            shutil.rmtree(root, ignore_errors=True)
            reference_warehouse(root, full_fake_github)
            built.touch()
    return Refreshed(root, None)


def series_keys(database: Path) -> dict[str, tuple]:
    """series_digest -> the plain-Python series key of tests/expected.py (``Row.series``)."""
    with open_views(database) as con:
        rows = con.execute(
            """select distinct r.series_digest, r.kernel, r.mode, r.provider, r.backend, r.metric, r.unit, r.gpu,
                      r.x_name, r.x_label, r.x_value, r.config_json, p.harness
               from results as r
               join fact_result using (result_digest)
               join dim_protocol as p using (protocol_digest)"""
        ).fetchall()
    keys = {digest: (*fields, canonical_config(config), harness) for digest, *fields, config, harness in rows}
    assert len(set(keys.values())) == len(keys), "one series key per digest"
    return keys


@pytest.fixture(scope="session")
def warehouse_series(mirror_warehouse: Refreshed) -> dict[str, tuple]:
    return series_keys(mirror_warehouse.database)


@pytest.fixture(scope="session")
def full_warehouse_series(full_mirror_warehouse: Refreshed) -> dict[str, tuple]:
    return series_keys(full_mirror_warehouse.database)


class Tier(NamedTuple):
    """A reference warehouse with the mirror it was built from, for a test run on either tier."""

    database: Path
    mirror: Mirror
    series: dict[str, tuple]


def tier(request: pytest.FixtureRequest, name: str) -> Tier:
    """``"cut"``: the fixture cut's; ``"full"``: the whole snapshot's (skips without ../shared).
    A test parametrized over both checks the same rule on each, with each one's own figures."""
    prefix = {"cut": "", "full": "full_"}[name]
    return Tier(
        request.getfixturevalue(f"{prefix}mirror_warehouse").database,
        request.getfixturevalue(f"{prefix}mirror"),
        request.getfixturevalue(f"{prefix}warehouse_series"),
    )
