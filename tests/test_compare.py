"""Each gh-pages run's compare with the run before it: fetched once over HTTP, kept in the raw store,
and never in the way of a refresh when upstream cannot give it."""

from __future__ import annotations

import json
import shutil
from itertools import pairwise
from pathlib import Path

import pytest

from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.compare import fetch_compares, run_pairs
from liger_warehouse.upstream.http import UpstreamError
from liger_warehouse.upstream.sources import MirrorUpstream
from tests.conftest import refresh
from tests.fake_github import FakeGitHub
from tests.small_mirror import small_mirror

RUNS_FILE = Path("gh-pages") / "benchmarks" / "commits.txt"


def _runs(mirror: Path) -> list[str]:
    return (mirror / RUNS_FILE).read_text().split()


def _pair_keys(runs: list[str]) -> list[str]:
    commits = [run.split("-v")[0] for run in runs]
    return [f"{base}...{head}" for base, head in pairwise(commits)]


def _mirror_upstream(mirror: Path) -> MirrorUpstream:
    return MirrorUpstream(mirror, ("benchmark/data/all_benchmark_data.csv",))


@pytest.mark.slow
def test_each_run_keeps_its_compare_and_a_nightly_asks_for_one(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=4)
    runs = _runs(mirror)
    (mirror / RUNS_FILE).write_text("\n".join(runs[:-1]) + "\n")
    root = tmp_path / "warehouse"
    with FakeGitHub(mirror) as fake:
        assert refresh(root, fake).result.success
        raw = RawStore(Storage(root))
        for key in _pair_keys(runs[:-1]):
            expected = json.loads((mirror / "compare" / f"{key}.json").read_bytes())
            assert json.loads(raw.get_compare(key)) == expected, key

        (mirror / RUNS_FILE).write_text("\n".join(runs) + "\n")  # the next nightly
        fake.clear_log()
        assert refresh(root, fake).result.success
        asked = [r.path for r in fake.requests if "/compare/" in r.path]
        assert asked == [f"/api/v3/repos/linkedin/Liger-Kernel/compare/{_pair_keys(runs)[-1]}?per_page=100"]
        assert raw.has_compare(_pair_keys(runs)[-1])


def test_pairs_follow_upload_order_and_name_a_release_run_by_its_commit(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=30)
    runs = _runs(mirror)
    pairs = run_pairs(_mirror_upstream(mirror).list())
    assert [p.key for p in pairs] == _pair_keys(runs)
    releases = [run for run in runs if "-v" in run]
    assert releases, "the mirror's newest runs include a release run"
    assert all("-v" not in p.base + p.head for p in pairs)


def test_without_compares_nothing_is_kept_and_nothing_fails(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=3)
    shutil.rmtree(mirror / "compare")
    raw = RawStore(Storage(tmp_path / "warehouse"))
    upstream = _mirror_upstream(mirror)
    got = fetch_compares(upstream, raw, run_pairs(upstream.list()), budget=10)
    assert (got.stored, got.failures) == ([], [])
    assert got.missing == list(reversed(_pair_keys(_runs(mirror))))
    assert not (tmp_path / "warehouse" / "raw" / "compare").exists()


def test_a_malformed_compare_is_refused_by_name_and_the_rest_wait(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=4)
    keys = _pair_keys(_runs(mirror))
    (mirror / "compare" / f"{keys[-1]}.json").write_text('{"status": "ahead"}')
    raw = RawStore(Storage(tmp_path / "warehouse"))
    upstream = _mirror_upstream(mirror)
    got = fetch_compares(upstream, raw, run_pairs(upstream.list()), budget=10)
    assert got.stored == [] and len(got.failures) == 1
    assert f"compare {keys[-1]}: not a compare of two commits" in got.failures[0]
    # The next round, with the file mended, takes every pair, newest first, within its budget.
    (mirror / "compare" / f"{keys[-1]}.json").unlink()
    got = fetch_compares(upstream, raw, run_pairs(upstream.list()), budget=1)
    assert (got.stored, got.missing) == ([], [keys[-1]])
    got = fetch_compares(upstream, raw, run_pairs(upstream.list()), budget=10)
    assert got.stored == list(reversed(keys[:-1]))


def test_a_commit_that_is_not_hex_never_reaches_a_url_or_a_file(tmp_path: Path) -> None:
    upstream = _mirror_upstream(tmp_path)
    with pytest.raises(UpstreamError, match="not a hex commit"):
        upstream.compare("../../etc", "0a62700")
