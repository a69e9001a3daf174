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
from dagster._core.instance.ref import InstanceRef
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
    root: Path,
    fake: FakeGitHub | None = None,
    upstream: str | None = None,
    job: str = "refresh",
    dagster_home: Path | None = None,
    **extra: str,
) -> Refreshed:
    """One run of a real job (``refresh`` by default), against a fake GitHub or a mirror directory,
    recorded in an ephemeral Dagster instance or in the one of ``dagster_home``."""
    from pipelines.definitions import load

    settings = {
        "LIGER_WAREHOUSE_DIR": str(root),
        "LIGER_WAREHOUSE_UPSTREAM": upstream or "github:linkedin/Liger-Kernel",
        "LIGER_WAREHOUSE_GITHUB_API": fake.api_base if fake else None,
        "LIGER_WAREHOUSE_GITHUB_RAW": fake.raw_base if fake else None,
        **FAST_RETRIES,
        **extra,
    }
    with env(**settings), _instance(dagster_home) as instance:
        result = load().resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False)
    return Refreshed(root, result)


def _instance(home: Path | None) -> dg.DagsterInstance:
    if home is None:
        return dg.DagsterInstance.ephemeral()
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


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


@dataclass(frozen=True)
class Reference:
    """A warehouse the real jobs built once per test run (``refresh``, then ``outputs``), and the
    Dagster instance that recorded their runs; tests must not modify either."""

    root: Path
    dagster_home: Path

    @property
    def database(self) -> Path:
        return self.root / "catalog.sqlite"

    def _events(self, job: str, kind: dg.DagsterEventType) -> list[dg.DagsterEvent]:
        with _instance(self.dagster_home) as instance:
            (run,) = instance.get_runs(filters=dg.RunsFilter(job_name=job))
            return [entry.dagster_event for entry in instance.all_logs(run.run_id, of_type=kind)]

    def materializations(self, asset: str) -> list[dg.AssetMaterialization]:
        """What the ``outputs`` run recorded for ``asset``."""
        events = self._events("outputs", dg.DagsterEventType.ASSET_MATERIALIZATION)
        return [e.event_specific_data.materialization for e in events if e.asset_key.path == [asset]]

    def check_evaluations(self) -> list[dg.AssetCheckEvaluation]:
        """Every asset check the ``refresh`` run evaluated."""
        events = self._events("refresh", dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        return [e.event_specific_data for e in events]


def shared_reference(
    name: str, fake: FakeGitHub, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Reference:
    """The reference warehouse ``fake`` serves, built once per test run: under xdist the first
    worker to ask builds it in the run's directory while the others wait, then all read it (a
    build and its outputs cost a core 15 s for the fixture cut and a minute for the snapshot)."""
    run_dir = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        run_dir = run_dir.parent  # pytest-N, above each worker's popen-gwK
    reference = Reference(run_dir / name, run_dir / f"{name}-dagster")
    with FileLock(run_dir / f"{name}.lock"):
        built = run_dir / f"{name}.built"
        if not built.exists():  # a worker whose build failed may have left part of one
            shutil.rmtree(reference.root, ignore_errors=True)
            shutil.rmtree(reference.dagster_home, ignore_errors=True)
            reference.dagster_home.mkdir()
            (reference.dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
            for job in ("refresh", "outputs"):
                done = refresh(reference.root, fake, job=job, dagster_home=reference.dagster_home)
                assert done.result.success, f"the {job} run of the reference warehouse {name} failed"
            built.touch()
    return reference


@pytest.fixture(scope="session")
def mirror_warehouse(tmp_path_factory: pytest.TempPathFactory, fake_github: FakeGitHub, worker_id: str) -> Reference:
    """The warehouse of the fixture cut."""
    return shared_reference("warehouse", fake_github, tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def full_mirror_warehouse(
    tmp_path_factory: pytest.TempPathFactory, full_fake_github: FakeGitHub, worker_id: str
) -> Reference:
    """The warehouse of the whole snapshot, for the larger tier."""
    return shared_reference("full-warehouse", full_fake_github, tmp_path_factory, worker_id)


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
def warehouse_series(mirror_warehouse: Reference) -> dict[str, tuple]:
    return series_keys(mirror_warehouse.database)


@pytest.fixture(scope="session")
def full_warehouse_series(full_mirror_warehouse: Reference) -> dict[str, tuple]:
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
