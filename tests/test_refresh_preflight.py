"""The listing a CLI refresh makes before it launches the job: "nothing to do" only when the
refresh job itself would publish nothing (issue 13: a no-change refresh costs its listing).

Each case changes the mirror the way upstream can change, then asks both: the pre-flight
(``upstream_as_published``) and a real run of the ``refresh`` job on a copy of the warehouse.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from liger_warehouse.lake.connect import latest_snapshot, read_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.runtime.warehouse_status import held_golden, read_revisions, upstream_as_published
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream
from tests.conftest import refresh
from tests.small_mirror import small_mirror


def _drop_newest_run(mirror: Path) -> None:
    runs = mirror / "gh-pages" / "benchmarks" / "commits.txt"
    runs.write_text("\n".join(runs.read_text().split()[:-1]) + "\n")


def _drop_newest_commit(mirror: Path) -> None:
    listing = mirror / "commits" / "all_benchmark_data.json"
    listing.write_text(json.dumps(json.loads(listing.read_text())[1:]))


def _change_golden_runs(mirror: Path) -> None:
    golden = mirror / "gh-pages" / "benchmarks" / "golden_commits.json"
    data = json.loads(golden.read_text())
    data["default_commit"] = "0000000"
    golden.write_text(json.dumps(data))


CHANGES: dict[str, Callable[[Path], None] | None] = {
    "nothing": None,
    "a run left upstream": _drop_newest_run,
    "a commit left upstream": _drop_newest_commit,
    "the golden runs changed": _change_golden_runs,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A warehouse of a small cut of the mirror, built by the job; and that cut."""
    work = tmp_path_factory.mktemp("preflight")
    mirror = small_mirror(work / "mirror")
    assert refresh(work / "warehouse", upstream=str(mirror)).result.success
    return work / "warehouse", mirror


@pytest.mark.parametrize("change", CHANGES)
def test_nothing_to_do_exactly_when_the_job_publishes_nothing(built, change: str, tmp_path: Path):
    warehouse, mirror = built
    changed_mirror, root = tmp_path / "mirror", tmp_path / "warehouse"
    shutil.copytree(mirror, changed_mirror)
    shutil.copytree(warehouse, root)
    if CHANGES[change]:
        CHANGES[change](changed_mirror)
    lake = Lake.of(str(root))
    before = latest_snapshot(lake)
    listing = open_upstream(UpstreamSettings(upstream=str(changed_mirror)), Storage(tmp_path / "state")).list()
    with read_lake(lake) as con:
        nothing_to_do = upstream_as_published(read_revisions(con), held_golden(con), listing)

    assert refresh(root, upstream=str(changed_mirror)).result.success
    assert nothing_to_do == (latest_snapshot(lake) == before)
    assert nothing_to_do == (change == "nothing")
