"""A withdrawn import that brought a version of its own and moved points of existing builds
leaves every build, version and verdict as if it had never been imported, and stays history.

Two warehouses of the fixture cut: the reference one, which never imported anything, and a copy
that imports 50 records made from the reference's own export, then withdraws them. 25 records
of 0.6.3 are relabelled 0.6.2, a version the cut does not hold (a build and a version of their
own, ranked before every later one); 25 records are relabelled to an older release of their
series, so that release's point becomes the median of its own value and a newer one (its
steps and verdicts change). Every object that says what a build stands on, or judges builds,
is then the same rows in both (``except all`` both ways); while the import was current, those
of ``MOVED`` differed."""

from __future__ import annotations

import json
import shutil
from itertools import pairwise
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from packaging.version import Version

from tests.conftest import env
from tests.plain_duckdb import open_views
from tests.reliability.published import dagster_home
from tests.test_export_kernelindex import export_path
from tests.test_import_kernelindex import _cli

pytestmark = pytest.mark.slow

NEW_VERSION = "0.6.2"
PER_KIND = 25
# What stands for each build and version, and every verdict that reads the builds or the runs.
OBJECTS = (
    "dim_build",
    "dim_version",
    "fact_build_point",
    "versions",
    "version_points",
    "version_steps",
    "version_history",
    "regressions",
    "speedups",
    "speedup_history",
    "series_noise",
)
# Those the import moves while it is current.
MOVED = ("dim_build", "dim_version", "fact_build_point", "versions", "regressions", "version_history")


def _version(record: dict) -> str:
    return record["run"]["metadata"]["labels"]["liger_version"]


def _series(record: dict) -> str:
    """The series a record measures: its external id without the observation time."""
    return record["run"]["spec"]["sourceNative"]["externalId"].rsplit("/", 1)[0]


def _p50(record: dict) -> float:
    return next(v for k, v in record["run"]["spec"]["sourceNative"]["metrics"].items() if k.endswith("_50"))


def _relabelled(exported: Path) -> list[dict]:
    """25 records of 0.6.3 as 0.6.2; then 25 records of other series, one per series, each as
    the oldest release of its series where its p50 differs from that release's (the oldest
    target releases first)."""
    records = [json.loads(line) for line in exported.read_bytes().splitlines()]
    assert NEW_VERSION not in {_version(r) for r in records}
    new = [r for r in records if _version(r) == "0.6.3"][:PER_KIND]
    oldest: dict[str, dict] = {}
    for record in sorted(records, key=lambda r: Version(_version(r))):
        oldest.setdefault(_series(record), record)
    others = [r for r in records if _series(r) not in {_series(n) for n in new}]
    later = [r for r in others if Version(_version(r)) > Version(_version(oldest[_series(r)]))]
    moved: dict[str, dict] = {}
    for record in sorted(later, key=lambda r: (Version(_version(oldest[_series(r)])), _series(r))):
        first = oldest[_series(record)]
        if len(moved) < PER_KIND and _series(record) not in moved and _p50(record) != _p50(first):
            moved[_series(record)] = record
            record["run"]["metadata"]["labels"]["liger_version"] = _version(first)
    for record in new:
        record["run"]["metadata"]["labels"]["liger_version"] = NEW_VERSION
    assert len(new) == len(moved) == PER_KIND
    return new + list(moved.values())


def _queries(root: Path) -> dict[str, str]:
    """Each object, ``compare_runs`` of the two newest runs, and ``compare_versions`` of each pair
    of consecutive releases and of each pair of builds a series steps between."""
    release = "select build from dim_build where build_kind = 'release' order by build_rank"
    with open_views(root / "catalog.sqlite") as con:
        releases = [build for (build,) in con.execute(release).fetchall()]
        steps = con.execute("select distinct base_version, head_version from regressions").fetchall()
    pairs = sorted(set(pairwise(releases)) | set(steps))
    return (
        {name: f"select * from {name}" for name in OBJECTS}
        | {"compare_runs": "select * from compare_runs('previous', 'latest')"}
        | {f"compare_versions {b} {h}": f"select * from compare_versions('{b}', '{h}')" for b, h in pairs}
    )


def _rows(root: Path, queries: dict[str, str]) -> dict[str, pa.Table]:
    with open_views(root / "catalog.sqlite") as con:
        return {name: con.execute(sql).to_arrow_table() for name, sql in queries.items()}


def _differences(withdrawn: dict[str, pa.Table], never: dict[str, pa.Table]) -> dict[str, tuple[int, int]]:
    """Per query of ``withdrawn`` whose rows differ: how many rows only each side has (``except all``)."""
    out = {}
    with duckdb.connect() as con:
        for name in withdrawn:
            con.register("a", withdrawn[name])
            con.register("b", never[name])
            only = [
                con.execute(f"select count(*) from (select * from {x} except all select * from {y})").fetchall()[0][0]
                for x, y in (("a", "b"), ("b", "a"))
            ]
            if any(only):
                out[name] = tuple(only)
    return out


def test_a_withdrawn_import_of_a_new_version_and_moved_points_changes_no_build_or_verdict(mirror_warehouse, tmp_path):
    never = mirror_warehouse.root
    withdrawn = tmp_path / "withdrawn"
    shutil.copytree(never, withdrawn, ignore=shutil.ignore_patterns("exports"))
    queries = _queries(never)
    expected = _rows(never, queries)
    file = tmp_path / "lab.ndjson"
    file.write_text("".join(json.dumps(r) + "\n" for r in _relabelled(export_path(never))))

    with env(DAGSTER_HOME=str(dagster_home(tmp_path / "dagster_home"))):
        result = _cli("import", "kernelindex", str(file), "-w", str(withdrawn))
        assert result.exit_code == 0, result.output
        assert "50 new results, 0 quarantined" in result.output
        # While current, the import stands for builds: a version and a build of its own, and
        # points and verdicts of existing builds moved (read until one comparison differs: the
        # whole set is read once more after the withdrawal).
        moved = _differences(_rows(withdrawn, {name: queries[name] for name in MOVED}), expected)
        assert set(MOVED) <= set(moved), moved
        versions = (name for name in queries if name.startswith("compare_versions"))
        assert any(_differences(_rows(withdrawn, {name: queries[name]}), expected) for name in versions)
        result = _cli("import", "withdraw", "lab", "-w", str(withdrawn))
        assert result.exit_code == 0, result.output

    assert _differences(_rows(withdrawn, queries), expected) == {}
    # Kept as history: the revision (not head), every result (none current, each withdrawn),
    # the relabelled ones under the version no build or `versions` row shows any more.
    history = {
        "select is_head from dim_upstream_revision where source_key = 'import:lab'": [(False,)],
        "select count(*), count(*) filter (where is_current) from fact_result where source_key = 'import:lab'": [
            (2 * PER_KIND, 0)
        ],
        "select reason, count(*) from restatements where source_key = 'import:lab' group by reason": [
            ("withdrawn", 2 * PER_KIND)
        ],
        f"select count(*) from results where liger_version = '{NEW_VERSION}'": [(PER_KIND,)],
    }
    with open_views(withdrawn / "catalog.sqlite") as con:
        assert {sql: con.execute(sql).fetchall() for sql in history} == history
