"""Fixtures of the reliability suite: a small published warehouse and the upstream after it.

``base_warehouse`` is built once per session from the ``BEFORE`` mirror; tests copy it and
never touch it. ``after_github`` serves the ``AFTER`` mirror over loopback, and
``clean_after`` is what a fault-free refresh of the base against it publishes: every test
that recovers from a fault compares against it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FAST_RETRIES, refresh
from tests.fake_github import FakeGitHub
from tests.reliability.published import contents
from tests.reliability.upstreams import AFTER, BEFORE, make_mirror

GITHUB = "github:linkedin/Liger-Kernel"


def github_env(fake: FakeGitHub, **extra: str) -> dict[str, str]:
    """Settings that point a refresh (in-process or a subprocess) at ``fake``."""
    return {
        "LIGER_WAREHOUSE_UPSTREAM": GITHUB,
        "LIGER_WAREHOUSE_GITHUB_API": fake.api_base,
        "LIGER_WAREHOUSE_GITHUB_RAW": fake.raw_base,
        **FAST_RETRIES,
        **extra,
    }


def copy_warehouse(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="session")
def before_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_mirror(tmp_path_factory.mktemp("upstream") / "before", BEFORE)


@pytest.fixture(scope="session")
def after_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_mirror(tmp_path_factory.mktemp("upstream") / "after", AFTER)


@pytest.fixture(scope="session")
def base_warehouse(tmp_path_factory: pytest.TempPathFactory, before_mirror: Path) -> Path:
    """Published from the BEFORE mirror; copy it, never modify it."""
    built = refresh(tmp_path_factory.mktemp("base") / "warehouse", upstream=str(before_mirror))
    assert built.result.success, "the base refresh failed"
    return built.root


@pytest.fixture(scope="session")
def after_github(after_mirror: Path) -> Iterator[FakeGitHub]:
    """The AFTER mirror over loopback HTTP. Tests that inject faults start their own."""
    with FakeGitHub(after_mirror) as fake:
        yield fake


@pytest.fixture(scope="session")
def after_warehouse(tmp_path_factory: pytest.TempPathFactory, base_warehouse: Path, after_github: FakeGitHub) -> Path:
    """The base after a fault-free refresh against AFTER; copy it, never modify it."""
    root = copy_warehouse(base_warehouse, tmp_path_factory.mktemp("clean") / "warehouse")
    done = refresh(root, after_github)
    assert done.result.success, "the clean refresh failed"
    return root


@pytest.fixture(scope="session")
def clean_after(after_warehouse: Path) -> dict:
    """The contents a fault-free refresh of the base against AFTER publishes."""
    return contents(after_warehouse)


@pytest.fixture
def base_copy(base_warehouse: Path, tmp_path: Path) -> Path:
    return copy_warehouse(base_warehouse, tmp_path / "warehouse")
