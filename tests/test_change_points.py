"""Change points: Apache Otava's e-divisive over each series' gh-pages runs, computed by the
``fact_change_point`` asset, published with the generation and served by the view."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from otava.analysis import compute_change_points

from liger_warehouse.analysis import change_points, otava_method, otava_split, point_stream
from tests import expected
from tests.conftest import MIRROR, refresh
from tests.plain_duckdb import lake_table, open_views
from tests.tiny_mirror import row, write_mirror

CP_ORDER = ["series_digest", "point_index"]

# The documented parameters (liger_warehouse/analysis/otava_split.py, README): pinned here on purpose.
WINDOW, MAX_PVALUE, MIN_MAGNITUDE, MIN_POINTS = 50, 0.001, 0.05, 10
VIEW = """
    select c.series_digest, c.run, c.prev_run, c.point_index, c.points, c.before_median, c.after_median,
           c.verdict, c.method, c.prev_version, c.liger_version
    from change_points c
"""


def _query(db: Path, sql: str, params: object = None) -> list[tuple]:
    with open_views(db) as con:
        return con.execute(sql, params).fetchall()


def test_parameters_are_the_documented_ones():
    assert (otava_method.WINDOW, otava_method.MAX_PVALUE) == (WINDOW, MAX_PVALUE)
    assert (otava_method.MIN_MAGNITUDE, otava_method.MIN_POINTS) == (MIN_MAGNITUDE, MIN_POINTS)
    assert "apache-otava" in change_points.method()


_COLUMNS = ["series_digest", "source", "first_revision_digest", "observed_at", "result_digest", "p50"]


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


def test_a_run_split_between_stream_batches_still_has_one_point():
    """The stream of points comes in batches that may end inside a series, or inside a run of a
    series: whatever the batch size, each series gets the first row of each of its runs."""
    rng = np.random.default_rng(5)
    rows = [
        (h, f"s{h}", seq, seq, float(rng.normal()))
        for h in range(6)
        for seq in range(1, 9)
        for _ in range(int(rng.integers(1, 4)))
    ]
    table = pa.table({name: [r[i] for r in rows] for i, name in enumerate(["h", "series_digest", "seq", "rid", "p50"])})
    expected = defaultdict(dict)
    for h, digest, seq, _, p50 in rows:
        expected[(h, digest)].setdefault(seq, p50)
    for size in (1, 2, 3, 5, 8, len(rows)):
        got = {
            s.key: dict(zip(s.seqs.tolist(), s.values.tolist(), strict=True))
            for s in point_stream.series_of(table.to_batches(max_chunksize=size))
        }
        assert got == expected, size


def test_a_tie_in_time_goes_to_the_smallest_digest_and_detection_sees_the_standing_result():
    noise = [0.0, 0.004, -0.003, 0.002, -0.001, 0.003]
    flat = [1.0 + n for n in noise * 2]
    results, revisions = _frames({"s": flat})
    late = results.slice(6, 6)
    stood_in = late.with_columns(
        observed_at=pl.col("observed_at") + timedelta(hours=1), result_digest=pl.lit("z"), p50=pl.col("p50") + 0.3
    )
    tie = results.slice(0, 1).with_columns(result_digest=pl.lit("a"), p50=pl.lit(5.0))
    points = change_points.run_points(pl.concat([results, stood_in, tie]), revisions)
    assert points["p50"].to_list() == [5.0, *flat[1:6], *(v + 0.3 for v in flat[6:])]
    table = change_points.compute(pl.concat([results, stood_in]), revisions).to_pylist()
    assert [(r["point_index"], r["revision_digest"]) for r in table] == [(6, "rev07")]


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


def test_the_job_publishes_change_points_with_the_snapshot(tiny):
    assert lake_table(tiny, "fact_change_point").num_rows == 1
    rows = _query(tiny / "catalog.sqlite", VIEW)
    assert [(r[1], r[2], r[3], r[4], r[7]) for r in rows] == [("0000008", "0000007", 7, 12, "regression")]
    before, after = rows[0][5], rows[0][6]
    assert before == pytest.approx(1.002) and after == pytest.approx(1.4028)


@pytest.fixture(scope="module")
def found(mirror_warehouse) -> dict[str, list[tuple]]:
    rows = _query(mirror_warehouse.database, VIEW + " order by c.series_digest, c.point_index")
    by_series = defaultdict(list)
    for r in rows:
        by_series[r[0]].append(r)
    return by_series


@pytest.fixture(scope="module")
def raw_series(mirror_warehouse) -> dict[str, list[tuple[str, float, str]]]:
    """series_digest -> [(run, p50, Liger version)] read from the raw CSVs."""
    keys = _query(
        mirror_warehouse.database,
        "select distinct series_digest, kernel, mode, provider, backend, metric, unit, gpu, x_name, x_label, "
        "x_value, config_json from results where source = 'gh-pages'",
    )
    by_key = expected.run_series(expected.read_mirror(MIRROR))
    # Every gh-pages run is the main benchmark suite.
    held = {
        digest: (*fields, expected.canonical_config(config), expected.harness(None)) for digest, *fields, config in keys
    }
    assert sorted(held.values()) == sorted(by_key), "the warehouse's gh-pages series are the raw CSVs' series"
    return {digest: by_key[key] for digest, key in held.items()}


@pytest.mark.slow
def test_change_points_on_the_real_history(found, raw_series):
    assert sum(map(len, found.values())) == 79  # the fixture cut's
    for digest, rows in found.items():
        points = raw_series[digest]
        assert len(points) >= MIN_POINTS
        values = [p50 for _, p50, _ in points]
        indices = [r[3] for r in rows]
        medians = expected.segment_medians(values, indices)
        for r, (before, after) in zip(rows, medians, strict=True):
            assert (r[1], r[2], r[4]) == (points[r[3]][0], points[r[3] - 1][0], len(points))
            assert (r[5], r[6]) == (before, after)
            assert (r[9], r[10]) == (points[r[3] - 1][2], points[r[3]][2])
            assert r[7] == ("regression" if after > before else "improvement")


def test_the_whole_snapshot_has_more_than_100_change_points(full_mirror_warehouse):
    assert len(_query(full_mirror_warehouse.database, VIEW)) > 100


def test_change_point_indices_are_otavas(found, raw_series):
    """Otava itself, run on each raw series, finds the same change points."""
    long_enough = sorted(d for d, points in raw_series.items() if len(points) >= MIN_POINTS)
    assert len(long_enough) > 1000
    for digest in long_enough:
        values = [p50 for _, p50, _ in raw_series[digest]]
        cps, _ = compute_change_points(values, window_len=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE)
        assert [int(c.index) for c in cps] == [r[3] for r in found.get(digest, [])], digest
    short = [d for d, points in raw_series.items() if len(points) < MIN_POINTS]
    assert short and not any(d in found for d in short)


# --- Incremental refresh: resumed from change_point_state vs computed from scratch ----------


def _synthetic(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    if kind == "noise":
        base = np.ones(n)
    elif kind == "steps":
        base = 1.0 + 0.3 * (t >= n // 3) - 0.2 * (t >= 2 * n // 3)
    elif kind == "drift":
        base = 1.0 + 0.5 * t / n
    elif kind == "spikes":
        base = np.ones(n)
        base[rng.choice(n, n // 40, replace=False)] = 1.5
    else:  # a step among the very last points
        base = 1.0 + 0.4 * (t >= n - 5)
    return (base + rng.normal(0, 0.01, n)).round(6)


KINDS = ("noise", "steps", "drift", "spikes", "late_step")
# Points appended at each refresh: one run at a time, and bursts longer than a window.
APPENDS = (1, 1, 2, 5, 1, 13, 1, 50, 1, 1, 30, 1, 100)


def _otava(values: np.ndarray) -> list[tuple[int, float]]:
    found, _ = compute_change_points(
        values.tolist(), window_len=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE
    )
    return [(int(c.index), float(c.stats.pvalue)) for c in found]


@pytest.mark.parametrize("kind", KINDS)
def test_a_resumed_series_is_identical_to_one_computed_from_scratch(kind):
    """Append points refresh after refresh: every resumed result equals the one from scratch,
    which is Otava's compute_change_points itself, to the last bit of the p-values."""
    for seed in range(3):
        values = _synthetic(kind, 40 + sum(APPENDS), seed)
        seqs = np.arange(1, len(values) + 1)
        state, how = otava_split.analyze(seqs[:40], values[:40])
        assert how == "from_scratch"
        n = 40
        for add in APPENDS:
            n += add
            state, how = otava_split.analyze(seqs[:n], values[:n], state)
            scratch, _ = otava_split.analyze(seqs[:n], values[:n])
            assert how == "resumed"
            assert state == scratch, (kind, seed, n)
            assert state.found == _otava(values[:n]), (kind, seed, n)
        assert n == len(values)


def test_a_resumed_series_takes_the_t_tests_of_unchanged_segments_from_its_state(monkeypatch):
    """The final pass and merge compute again only the t-tests whose segments changed: those
    reaching the appended point, or between change points not tested before."""
    values = _synthetic("drift", 200, 0)
    seqs = np.arange(1, 201)
    before, _ = otava_split.analyze(seqs[:-1], values[:-1])
    assert before.tests and all(right < 199 for _, _, right in before.tests)
    computed = []
    compare = otava_split._TESTER.compare
    monkeypatch.setattr(otava_split._TESTER, "compare", lambda *sides: computed.append(sides) or compare(*sides))
    resumed, how = otava_split.analyze(seqs, values, before)
    resumed_computed = len(computed)
    computed.clear()
    scratch, _ = otava_split.analyze(seqs, values)
    assert (how, resumed) == ("resumed", scratch)
    assert resumed_computed < len(computed) / 2, (resumed_computed, len(computed))


def test_otavas_own_incremental_mode_differs_from_scratch():
    """Why the state is not Otava's compute_change_points(new_data=, old_weak_cp=): after one
    appended point of a drift it moves a change point that a computation from scratch and the
    resumed one put elsewhere (pinned; on these synthetic series it differs after 110 of 750
    single-point appends of a drift, 3 of 750 with spikes, none for noise and steps)."""
    values = _synthetic("drift", 260, 2)[:120]
    options = {"window_len": WINDOW, "max_pvalue": MAX_PVALUE, "min_magnitude": MIN_MAGNITUDE}
    _, weak = compute_change_points(values[:-1].tolist(), **options)
    theirs, _ = compute_change_points(values.tolist(), new_data=1, old_weak_cp=list(weak), **options)
    assert [int(c.index) for c in theirs] == [30, 87]
    assert [i for i, _ in _otava(values)] == [30, 102]
    before, _ = otava_split.analyze(np.arange(1, 120), values[:-1])
    ours, how = otava_split.analyze(np.arange(1, 121), values, before)
    assert (how, ours.found) == ("resumed", _otava(values))


def test_a_series_without_new_points_reuses_its_change_points():
    values = _synthetic("steps", 120, 0)
    seqs = np.arange(1, 121)
    state, _ = otava_split.analyze(seqs, values)
    assert state.found
    again, how = otava_split.analyze(seqs, values, state)
    assert (how, again) == ("unchanged", state)


def test_a_changed_history_is_computed_from_scratch():
    values = _synthetic("steps", 120, 1)
    seqs = np.arange(1, 121)
    state, _ = otava_split.analyze(seqs[:100], values[:100])
    restated = values.copy()
    restated[50] += 0.001
    for s, v in ((seqs, restated), (seqs[:90], values[:90]), (np.r_[seqs[:60], seqs[61:], 200], values)):
        again, how = otava_split.analyze(s, v, state)
        assert how == "from_scratch"
        assert again == otava_split.analyze(s, v)[0]


def _refreshes(values: dict[str, np.ndarray], sizes: list[int]):
    """compute_with_state over the first ``size`` runs, each refresh resuming from the last."""
    state = None
    for size in sizes:
        results, revisions = _frames({k: v[:size].tolist() for k, v in values.items()})
        table, state, counts = change_points.compute_with_state(results, revisions, state)
        yield size, table, state, counts, results, revisions


def test_the_state_table_resumes_every_series_of_a_generation():
    values = {f"{kind}-{seed}": _synthetic(kind, 150, seed) for kind in KINDS for seed in range(2)}
    values["short"] = _synthetic("noise", 150, 9)[:5]
    sizes = [30, 31, 32, 60, 61, 150, 150]
    seen = []
    for size, table, state, counts, results, revisions in _refreshes(values, sizes):
        assert table == change_points.compute(results, revisions), size
        assert state.num_rows == len(values)
        seen.append((counts.resumed, counts.unchanged, counts.from_scratch))
    # "short" stops growing at 5 runs; every other series resumes, until nothing is new.
    assert seen == [(0, 0, 11), (10, 1, 0), (10, 1, 0), (10, 1, 0), (10, 1, 0), (10, 1, 0), (0, 11, 0)]


def test_series_analysed_on_several_workers_give_the_same_tables():
    """Batches of series on two worker processes give the tables and counts of one process, from
    scratch and resumed, byte for byte once written (the parts are named by their content)."""
    values = {f"{kind}-{seed}": _synthetic(kind, 150, seed) for kind in KINDS for seed in range(3)}
    state = {1: None, 2: None}
    for size in (60, 61, 150):
        results, revisions = _frames({k: v[:size].tolist() for k, v in values.items()})
        out = {w: change_points.compute_with_state(results, revisions, state[w], w, 100) for w in (1, 2)}
        (table, state[1], counts), (table_2, state[2], counts_2) = out[1], out[2]
        assert table.num_rows > 0
        assert (table_2, state[2], counts_2) == (table, state[1], counts), size
        assert _parquet_bytes(table_2) == _parquet_bytes(table)
        assert _parquet_bytes(state[2]) == _parquet_bytes(state[1])
    assert (counts.resumed, counts.from_scratch) == (len(values), 0)


def _parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def test_the_streaming_process_does_not_load_otava():
    """With workers, Otava and SciPy load in the worker processes only: the process that reads
    DuckDB and writes the tables never imports them."""
    script = """
import sys
import polars as pl
from liger_warehouse.analysis import change_points
results = pl.DataFrame({"series_digest": ["s"] * 12, "source": ["gh-pages"] * 12,
    "first_revision_digest": [f"r{i}" for i in range(12)], "observed_at": list(range(12)),
    "result_digest": [f"d{i}" for i in range(12)], "p50": [1.0] * 6 + [2.0] * 6})
revisions = pl.DataFrame({"revision_digest": [f"r{i}" for i in range(12)], "seq": list(range(12))})
table, _, _ = change_points.compute_with_state(results, revisions, None, 2)
print(table.column("point_index").to_pylist(), sorted(m for m in sys.modules if m.split(".")[0] in ("otava", "scipy")))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[6]", "[]"]


def test_state_from_another_method_is_not_used():
    values = {"steps": _synthetic("steps", 80, 0)}
    results, revisions = _frames({"steps": values["steps"][:70].tolist()})
    _, state, _ = change_points.compute_with_state(results, revisions)
    other = state.set_column(state.schema.get_field_index("method"), "method", pa.array(["otava 0.0"] * state.num_rows))
    results, revisions = _frames({"steps": values["steps"].tolist()})
    table, _, counts = change_points.compute_with_state(results, revisions, other)
    assert (counts.resumed, counts.from_scratch) == (0, 1)
    assert table == change_points.compute(results, revisions)


def test_state_in_another_layout_is_not_used():
    values = {"steps": _synthetic("steps", 80, 0)}
    results, revisions = _frames({"steps": values["steps"][:70].tolist()})
    _, state, _ = change_points.compute_with_state(results, revisions)
    old = state.drop_columns(["change_points"])
    results, revisions = _frames({"steps": values["steps"].tolist()})
    table, _, counts = change_points.compute_with_state(results, revisions, old)
    assert (counts.resumed, counts.from_scratch) == (0, 1)
    assert table == change_points.compute(results, revisions)


def test_a_second_refresh_resumes_from_the_published_state(tmp_path):
    """Two refreshes of a warehouse: the second resumes from the state the first published and
    publishes the same change points as a computation from scratch over all runs."""
    values = _synthetic("steps", 40, 3)
    runs = {f"{i + 1:07x}": [row("liger", float(v), "0.9.0", f"2026-02-{i // 24 + 1:02d} {i % 24:02d}:00:00")]
            for i, v in enumerate(values)}  # fmt: skip
    main = [[row("liger", 1.0, "0.9.0", "2026-01-01 01:00:00")]]
    older = dict(list(runs.items())[:30])
    first = refresh(tmp_path / "warehouse", upstream=str(write_mirror(tmp_path / "m1", main, older)))
    assert first.result.success
    assert lake_table(tmp_path / "warehouse", "change_point_state").num_rows == 1
    second = refresh(tmp_path / "warehouse", upstream=str(write_mirror(tmp_path / "m2", main, runs)))
    assert second.result.success
    [event] = [e for e in second.result.get_asset_materialization_events() if e.asset_key.path == ["fact_change_point"]]
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert (metadata["series_resumed"], metadata["series_from_scratch"]) == (1, 0)
    root = tmp_path / "warehouse"
    results = pl.from_arrow(lake_table(root, "fact_result", _COLUMNS))
    revisions = pl.from_arrow(lake_table(root, "dim_upstream_revision", ["revision_digest", "seq"]))
    assert lake_table(root, "fact_change_point", order=CP_ORDER) == change_points.compute(results, revisions)
    found = _query(root / "catalog.sqlite", "select point_index, points from change_points order by 1")
    assert found and found == [(index, 40) for index, _ in _otava(values)], "Otava's change points over the 40 runs"


def test_a_refresh_keeps_the_rows_of_series_without_new_points(tmp_path):
    """The new runs hold one series; the other series is unchanged and keeps its rows, and both
    tables equal a computation from scratch."""
    values, other = _synthetic("steps", 40, 4), _synthetic("drift", 30, 5)
    stamp = "2026-02-{:02d} {:02d}:00:00"
    runs = {
        f"{i + 1:07x}": [row("liger", float(v), "0.9.0", stamp.format(i // 24 + 1, i % 24))]
        + (
            [row("liger", float(other[i]), "0.9.0", stamp.format(i // 24 + 1, i % 24), kernel="swiglu")]
            if i < 30
            else []
        )
        for i, v in enumerate(values)
    }
    main = [[row("liger", 1.0, "0.9.0", "2026-01-01 01:00:00")]]
    first = refresh(
        tmp_path / "warehouse", upstream=str(write_mirror(tmp_path / "m1", main, dict(list(runs.items())[:30])))
    )
    assert first.result.success
    second = refresh(tmp_path / "warehouse", upstream=str(write_mirror(tmp_path / "m2", main, runs)))
    assert second.result.success
    [event] = [e for e in second.result.get_asset_materialization_events() if e.asset_key.path == ["fact_change_point"]]
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert (metadata["series_resumed"], metadata["series_unchanged"], metadata["points"]) == (1, 1, 70)
    root = tmp_path / "warehouse"
    results = pl.from_arrow(lake_table(root, "fact_result", _COLUMNS))
    revisions = pl.from_arrow(lake_table(root, "dim_upstream_revision", ["revision_digest", "seq"]))
    table, state, _ = change_points.compute_with_state(results, revisions)
    assert lake_table(root, "fact_change_point", order=CP_ORDER) == table and table.num_rows >= 2
    assert lake_table(root, "change_point_state", order=["series_digest"]) == state
