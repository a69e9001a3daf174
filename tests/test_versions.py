"""Liger version ordering and gh-pages run names."""

from __future__ import annotations

import csv
import gzip
from functools import cache

import pytest
from packaging.version import Version

from liger_warehouse.model.versions import is_valid_run_name, parse_version, split_run_name, version_sort_key
from tests.conftest import MIRROR, require_full_mirror


@cache
def _mirror_versions() -> frozenset[str]:
    versions = set()
    for path in sorted(MIRROR.glob("**/*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            versions.update(row["liger_version"] for row in csv.DictReader(handle))
    return frozenset(versions)


def test_parse_version_accepts_releases_and_prereleases() -> None:
    assert parse_version("0.5.10") == Version("0.5.10")
    assert parse_version(" 0.7.0rc1 ") == Version("0.7.0rc1")
    assert parse_version("0.7.0.dev1") == Version("0.7.0.dev1")


@pytest.mark.parametrize("text", ["", "   ", None, "latest", "main", "1.2.x", "0.6.4-dirty", "v"])
def test_parse_version_rejects_non_versions(text: str | None) -> None:
    assert parse_version(text) is None


def test_semantic_order() -> None:
    texts = ["0.10.0", "0.7.0", "junk", "0.5.9", "0.7.0rc1", "0.5.10", "0.7.0.dev1", "0.6.4"]
    assert sorted(texts, key=version_sort_key) == [
        "junk",
        "0.5.9",
        "0.5.10",
        "0.6.4",
        "0.7.0.dev1",
        "0.7.0rc1",
        "0.7.0",
        "0.10.0",
    ]


def test_string_order_would_be_wrong() -> None:
    # The reason version text is never sorted as text.
    assert sorted(["0.5.9", "0.5.10"]) == ["0.5.10", "0.5.9"]
    assert max(["0.5.9", "0.5.10"], key=version_sort_key) == "0.5.10"


def test_unparseable_versions_sort_first_and_by_text() -> None:
    assert sorted(["b", "0.1.0", "a", None], key=version_sort_key) == [None, "a", "b", "0.1.0"]


def test_every_mirror_version_parses() -> None:
    versions = _mirror_versions() - {""}
    assert versions, "the mirror has liger_version values"
    unparsed = sorted(text for text in versions if parse_version(text) is None)
    assert unparsed == []
    ordered = sorted(versions, key=version_sort_key)
    assert ordered.index("0.5.10") > ordered.index("0.5.8")


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("0a62700-v0.6.4", ("0a62700", "0.6.4")),
        ("0a62700", ("0a62700", None)),
        ("7644a0f-v0.7.0", ("7644a0f", "0.7.0")),
        ("7644a0f-v0.7.0rc1", ("7644a0f", "0.7.0rc1")),
        ("a" * 40, ("a" * 40, None)),
    ],
)
def test_split_run_name(run: str, expected: tuple[str, str | None]) -> None:
    assert is_valid_run_name(run)
    assert split_run_name(run) == expected


@pytest.mark.parametrize(
    "run",
    [
        "",
        "..",
        "../0a62700",
        "0a62700/..",
        "/0a62700",
        "/etc/passwd",
        "0a62700-v0.6.4/../x",
        "0a62700-v0..6",
        "0a62700-v",
        "0a62700-vlatest",
        "0a62700-0.6.4",
        "0A62700",
        "0a6270",
        "a" * 41,
        "0a62700\n",
        "0a62700 ",
        "g0a6270",
    ],
)
def test_invalid_run_names_are_rejected(run: str) -> None:
    assert not is_valid_run_name(run)
    with pytest.raises(ValueError, match="not a gh-pages run name"):
        split_run_name(run)


def test_every_mirror_run_name_is_valid() -> None:
    # The releases named below are the whole snapshot's; the fixture cut holds two of them.
    lines = (require_full_mirror() / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()
    assert lines
    for run in lines:
        commit, version = split_run_name(run)
        assert len(commit) == 7
        assert version is None or parse_version(version) is not None
    releases = [split_run_name(run)[1] for run in lines if split_run_name(run)[1]]
    assert sorted(releases, key=version_sort_key) == ["0.6.3", "0.6.4", "0.6.5", "0.7.0"]
