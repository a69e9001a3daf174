"""A withdrawn import is gone from every build and verdict, and kept as history.

Two warehouses of one cut of the mirror: one that never imported anything, and a copy that
imported 50 of its own exported records (their versions and series overlap the mirror's, so
while current they change the builds: a version without a release run gets a release build)
and then withdrew them. Every build,
point and verdict of the two is the same set of rows (``except all`` both ways); the withdrawn
results stay in ``fact_result``, none current, each shown as withdrawn in ``restatements``."""

from __future__ import annotations

import shutil
from itertools import pairwise
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tests.conftest import env, refresh
from tests.plain_duckdb import open_views
from tests.reliability.published import dagster_home
from tests.small_mirror import small_mirror
from tests.test_import_kernelindex import _cli

pytestmark = pytest.mark.slow

RECORDS = 50
# What stands for each build, and every verdict that reads the builds or the runs.
VIEWS = (
    "dim_build",
    "version_points",
    "version_steps",
    "version_history",
    "regressions",
    "speedups",
    "speedup_history",
    "series_noise",
)


def _records(root: Path, tmp_path: Path) -> Path:
    """The first ``RECORDS`` records of the warehouse's export (in result digest order: every
    kind of source and version)."""
    out = tmp_path / "export"
    result = _cli("export", "kernelindex", "--out", str(out), "-w", str(root))
    assert result.exit_code == 0, result.output
    (exported,) = out.glob("*.ndjson")
    file = tmp_path / "lab.ndjson"
    file.write_bytes(b"\n".join(exported.read_bytes().splitlines()[:RECORDS]) + b"\n")
    return file


def _comparisons(root: Path) -> dict[str, str]:
    """``compare_versions`` of each pair of consecutive releases and of each pair of builds a
    series steps between (``regressions``), as read from ``root``."""
    release = "select build from dim_build where build_kind = 'release' order by build_rank"
    with open_views(root / "catalog.sqlite") as con:
        releases = [build for (build,) in con.execute(release).fetchall()]
        steps = con.execute("select distinct base_version, head_version from regressions").fetchall()
    pairs = sorted(set(pairwise(releases)) | set(steps))
    return {f"compare_versions {b} {h}": f"select * from compare_versions('{b}', '{h}')" for b, h in pairs}


def _rows(root: Path, queries: dict[str, str]) -> dict[str, pa.Table]:
    with open_views(root / "catalog.sqlite") as con:
        return {name: con.execute(sql).to_arrow_table() for name, sql in queries.items()}


def _differences(withdrawn: dict[str, pa.Table], never: dict[str, pa.Table]) -> dict[str, tuple[int, int]]:
    """Per query whose rows differ: how many rows only each side has (``except all``)."""
    con = duckdb.connect()
    out = {}
    for name in never:
        con.register("a", withdrawn[name])
        con.register("b", never[name])
        only = [
            # fetchall: DuckDB 2 refuses the next registration while a result is left unfetched
            con.execute(f"select count(*) from (select * from {x} except all select * from {y})").fetchall()[0][0]
            for x, y in (("a", "b"), ("b", "a"))
        ]
        if any(only):
            out[name] = tuple(only)
    return out


def test_a_withdrawn_import_leaves_every_build_and_verdict_as_if_never_imported(tmp_path):
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=3)
    never = tmp_path / "never-imported"
    assert refresh(never, upstream=str(mirror)).result.success
    withdrawn = tmp_path / "withdrawn"
    shutil.copytree(never, withdrawn)
    queries = {view: f"select * from {view}" for view in VIEWS} | _comparisons(never)
    expected = _rows(never, queries)
    assert sum(expected[name].num_rows for name in queries if name.startswith("compare_versions")) > 0

    file = _records(never, tmp_path)
    with env(DAGSTER_HOME=str(dagster_home(tmp_path / "dagster_home"))):
        result = _cli("import", "kernelindex", str(file), "-w", str(withdrawn))
        assert result.exit_code == 0, result.output
        # While current, the import stands for builds: a build of its own among them.
        assert "dim_build" in _differences(_rows(withdrawn, queries), expected)
        result = _cli("import", "withdraw", "lab", "-w", str(withdrawn))
        assert result.exit_code == 0, result.output

    assert _differences(_rows(withdrawn, queries), expected) == {}
    # Kept as history: every result, none current, each shown as withdrawn.
    held = "select count(*), count(*) filter (where is_current) from fact_result where source_key = 'import:lab'"
    reasons = "select reason, count(*) from restatements where source_key = 'import:lab' group by reason"
    with open_views(withdrawn / "catalog.sqlite") as con:
        assert con.execute(held).fetchall() == [(RECORDS, 0)]
        assert con.execute(reasons).fetchall() == [("withdrawn", RECORDS)]
