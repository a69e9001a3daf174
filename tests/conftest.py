"""Shared fixtures: the upstream mirror, a fake GitHub serving it, and refreshes through the real job."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from tests.fake_github import FakeGitHub

SHARED = Path(__file__).resolve().parents[2] / "shared"
MIRROR = SHARED / "upstream" / "liger-kernel"
REFERENCE = SHARED / "spec" / "kernelindex-v1alpha1-embedding-full.json"
FAST_RETRIES = {"LIGER_WAREHOUSE_BACKOFF_SECONDS": "0.01", "LIGER_WAREHOUSE_TIMEOUT_SECONDS": "2"}


def require_mirror() -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"the upstream mirror is absent ({MIRROR}); CI always provides ../shared")
    return MIRROR


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
    result: dg.ExecuteInProcessResult
    outputs: dg.ExecuteInProcessResult | None = None

    @property
    def database(self) -> Path:
        return self.root / "liger.duckdb"


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


@pytest.fixture(scope="session")
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub(require_mirror()) as fake:
        yield fake


@pytest.fixture(scope="session")
def mirror_warehouse(tmp_path_factory: pytest.TempPathFactory, fake_github: FakeGitHub) -> Refreshed:
    """The warehouse built once from the whole mirror over loopback HTTP; tests must not modify it."""
    built = refresh(tmp_path_factory.mktemp("warehouse"), fake_github)
    assert built.result.success, "the reference refresh failed"
    built.outputs = refresh(built.root, fake_github, job="outputs").result
    assert built.outputs.success, "the outputs job after the reference refresh failed"
    return built
