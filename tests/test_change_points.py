"""Change points: Apache Otava's e-divisive over each series' gh-pages runs, computed by the
``fact_change_point`` asset, published with the generation and served by the view."""

from __future__ import annotations

import json
import shutil
import statistics
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from otava.analysis import compute_change_points

from pipelines import change_points
from pipelines.database import build_database
from pipelines.store.generations import GenerationStore
from pipelines.store.storage import Storage
from tests import expected
from tests.conftest import MIRROR, refresh
from tests.tiny_mirror import row, write_mirror

# The documented parameters (pipelines/change_points.py, README): pinned here on purpose.
WINDOW, MAX_PVALUE, MIN_MAGNITUDE, MIN_POINTS = 50, 0.001, 0.05, 10
VIEW = """
    select c.series_digest, c.run, c.prev_run, c.point_index, c.points, c.before_median, c.after_median,
           c.verdict, c.method
    from change_points c
"""


def _query(db: Path, sql: str, params: object = None) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params).fetchall()


def test_parameters_are_the_documented_ones():
    assert (change_points.WINDOW, change_points.MAX_PVALUE) == (WINDOW, MAX_PVALUE)
    assert (change_points.MIN_MAGNITUDE, change_points.MIN_POINTS) == (MIN_MAGNITUDE, MIN_POINTS)
    assert "apache-otava" in change_points.method()


def _frames(values: dict[str, list[float]], duplicate: tuple[str, int, float] | None = None):
    """fact_result and dim_upstream_revision columns for gh-pages runs r00, r01, ..."""
    start = datetime(2026, 1, 1)
    results = []
    for series, points in values.items():
        for seq, p50 in enumerate(points, start=1):
            at = start + timedelta(days=seq)
            results.append((series, "gh-pages", f"rev{seq:02d}", at, f"{series}-{seq}", p50))
    if duplicate:
        series, seq, p50 = duplicate
        results.append((series, "gh-pages", f"rev{seq:02d}", start + timedelta(days=seq, hours=1), "late", p50))
    columns = ["series_digest", "source", "first_revision_digest", "observed_at", "result_digest", "p50"]
    runs = max(len(v) for v in values.values())
    revisions = pl.DataFrame(
        {"revision_digest": [f"rev{s:02d}" for s in range(1, runs + 1)], "seq": range(1, runs + 1)}
    )
    return pl.DataFrame(results, schema=columns, orient="row"), revisions


def test_a_step_is_found_at_the_run_where_it_happened():
    noise = [0.0, 0.004, -0.003, 0.002, -0.001, 0.003]
    step = [1.0 + n for n in noise] + [1.3 + n for n in noise]
    results, revisions = _frames({"step": step, "flat": [1.0 + n for n in noise * 2], "short": step[:9]})
    table = change_points.compute(results, revisions).to_pylist()
    assert [
        (r["series_digest"], r["point_index"], r["revision_digest"], r["previous_revision_digest"]) for r in table
    ] == [("step", 6, "rev07", "rev06")]
    assert table[0]["before_median"] == statistics.median(step[:6])
    assert table[0]["after_median"] == statistics.median(step[6:])
    assert (table[0]["points"], table[0]["before_points"], table[0]["after_points"]) == (12, 6, 6)


def test_the_most_recent_result_of_a_run_stands_for_it():
    flat = [1.0, 1.001, 0.999, 1.002, 0.998, 1.0, 1.001, 0.999, 1.0, 1.002, 0.999, 1.0]
    results, revisions = _frames({"s": flat}, duplicate=("s", 12, 2.0))
    points = change_points.run_points(results, revisions)
    assert points.height == 12
    assert points.filter(pl.col("seq") == 12)["p50"].to_list() == [2.0]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """Twelve gh-pages runs: liger rms_norm steps from 1.0 to 1.4 ms at the eighth run."""
    root = tmp_path_factory.mktemp("tiny-runs")
    runs = {}
    for i in range(12):
        p50 = (1.0 if i < 7 else 1.4) * (1 + 0.002 * (i % 3))
        runs[f"{i + 1:07x}"] = [row("liger", p50, "0.9.0", f"2026-02-{i + 1:02d} 01:00:00")]
    mirror = write_mirror(root / "mirror", [[row("liger", 1.0, "0.9.0", "2026-01-01 01:00:00")]], runs)
    built = refresh(root / "warehouse", upstream=str(mirror))
    assert built.result.success
    assert any(e.asset_key.path == ["fact_change_point"] for e in built.result.get_asset_materialization_events())
    return root / "warehouse"


def test_the_job_publishes_change_points_with_the_generation(tiny):
    gens = GenerationStore(Storage(tiny))
    parts = gens.current().parts("fact_change_point")
    assert [p.rows for p in parts] == [1]
    rows = _query(tiny / "liger.duckdb", VIEW)
    assert [(r[1], r[2], r[3], r[4], r[7]) for r in rows] == [("0000008", "0000007", 7, 12, "regression")]
    before, after = rows[0][5], rows[0][6]
    assert before == pytest.approx(1.002) and after == pytest.approx(1.4028)


def test_the_view_exists_for_a_generation_published_without_change_points(tiny, tmp_path):
    """A generation published before the asset existed has no fact_change_point part."""
    root = tmp_path / "old"
    shutil.copytree(tiny, root)
    gens = GenerationStore(Storage(root))
    manifest = root / "generations" / f"{gens.current_id()}.json"
    data = json.loads(manifest.read_text())
    del data["tables"]["fact_change_point"]
    manifest.write_text(json.dumps(data))
    build_database(gens, gens.current(), root / "liger.duckdb")
    assert _query(root / "liger.duckdb", "select count(*) from change_points") == [(0,)]


@pytest.fixture(scope="module")
def found(mirror_warehouse) -> dict[str, list[tuple]]:
    rows = _query(mirror_warehouse.database, VIEW + " order by c.series_digest, c.point_index")
    by_series = defaultdict(list)
    for r in rows:
        by_series[r[0]].append(r)
    return by_series


@pytest.fixture(scope="module")
def raw_series(mirror_warehouse) -> dict[str, list[tuple[str, float]]]:
    """series_digest -> [(run, p50)] read from the raw CSVs."""
    keys = _query(
        mirror_warehouse.database,
        "select distinct series_digest, kernel, mode, provider, backend, metric, unit, gpu, x_name, x_label, "
        "x_value, config_json from results where source = 'gh-pages'",
    )
    by_key = expected.run_series(expected.read_mirror(MIRROR))
    return {digest: by_key[(*fields, expected.canonical_config(config))] for digest, *fields, config in keys}


def test_change_points_on_the_real_history(found, raw_series):
    assert sum(map(len, found.values())) > 100
    for digest, rows in found.items():
        points = raw_series[digest]
        assert len(points) >= MIN_POINTS
        values = [p50 for _, p50 in points]
        indices = [r[3] for r in rows]
        medians = expected.segment_medians(values, indices)
        for r, (before, after) in zip(rows, medians, strict=True):
            assert (r[1], r[2], r[4]) == (points[r[3]][0], points[r[3] - 1][0], len(points))
            assert (r[5], r[6]) == (before, after)
            assert r[7] == ("regression" if after > before else "improvement")


def test_change_point_indices_are_otavas(found, raw_series):
    """Otava itself, run on the raw series, finds the same change points."""
    long_enough = sorted(d for d, points in raw_series.items() if len(points) >= MIN_POINTS)
    assert len(long_enough) > 1000
    for digest in long_enough[::10]:
        values = [p50 for _, p50 in raw_series[digest]]
        cps, _ = compute_change_points(values, window_len=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE)
        assert [int(c.index) for c in cps] == [r[3] for r in found.get(digest, [])], digest
    short = [d for d, points in raw_series.items() if len(points) < MIN_POINTS]
    assert short and not any(d in found for d in short)
