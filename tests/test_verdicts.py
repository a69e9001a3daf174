"""Issue 12: the warehouse's verdicts against an independent recomputation of the rule in
docs/VERDICTS.md (tests/expected_verdicts.py), on the whole mirror and on small histories whose
verdicts are worked out by hand below."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from statistics import NormalDist

import pytest

from tests import expected
from tests import expected_verdicts as ev
from tests.conftest import refresh, series_keys, tier
from tests.plain_duckdb import open_views
from tests.tiny_mirror import row, write_mirror

EVIDENCE = (
    "change",
    "drift",
    "adjusted_change",
    "sweep_change",
    "noise",
    "z",
    "detectable_change",
    "environment_change",
)


def _query(db: Path, sql: str, params: object = None) -> list[dict]:
    with open_views(db) as con:
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _agree(got: object, want: object) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    return got == want


def assert_agree(got: dict, want: dict) -> None:
    """The same keys, and every value of every row the same (numbers to 1e-9 relative)."""
    missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
    assert not missing and not extra, f"{len(missing)} rows missing, e.g. {list(missing)[:3]}; {len(extra)} extra"
    wrong = [
        (key, column, got[key][column], value)
        for key, columns in want.items()
        for column, value in columns.items()
        if not _agree(got[key][column], value)
    ]
    assert not wrong, f"{len(wrong)} values differ, e.g. (row, column, warehouse, recomputed): {wrong[:5]}"


def _keyed(rows: list[dict], key: Callable[[dict], object]) -> dict:
    out = {key(r): r for r in rows}
    assert len(out) == len(rows), "one row per key"
    return out


def comparison_row(judged: ev.Judged) -> dict:
    """A recomputed comparison row in the columns of `compare_runs`, `compare_versions` and `regressions`."""
    return {
        "base_p50": judged.base.p50,
        "head_p50": judged.head.p50,
        **{column: getattr(judged, column) for column in EVIDENCE},
        "verdict": judged.verdict,
        "history": judged.history,
        "base_runs": judged.base.runs,
        "head_runs": judged.head.runs,
        "base_sources": list(judged.base.sources),
        "head_sources": list(judged.head.sources),
    }


def recent_evidence(judged: ev.Judged) -> dict:
    """The columns `compare_runs` adds: the head judged against the base run's recent level."""
    return {
        "recent_p50": judged.base.p50,
        "recent_change": judged.adjusted_change,
        "recent_verdict": judged.verdict,
        "recent_runs": judged.base.runs,
        "recent_sources": list(judged.base.sources),
    }


def _comparison(db: Path, series: dict, sql: str) -> dict:
    return _keyed(_query(db, sql), lambda r: series[r["series_digest"]])


def _regressions(db: Path, series: dict) -> dict:
    rows = _query(db, "select * from regressions")
    return _keyed(rows, lambda r: (series[r["series_digest"]], r["base_version"], r["head_version"]))


def _want_regressions(mirror: expected.Mirror) -> dict:
    return {key: comparison_row(judged) for key, judged in ev.regressions(mirror).items()}


def _series_noise(db: Path, series: dict) -> dict:
    return _keyed(_query(db, "select * from series_noise"), lambda r: series[r["series_digest"]])


def _want_series_noise(mirror: expected.Mirror) -> dict:
    return {
        s: {
            "history": n.history,
            "residual_spread": n.residual_spread,
            "sweep_spread": n.sweep_spread,
            "sweep_history": n.sweep_history,
            "residual_noise": n.residual_noise,
            "sweep_noise": n.sweep_noise,
            "noise": n.noise,
            "detectable_change": n.detectable_change,
        }
        for s, n in ev.series_noise(mirror).items()
    }


def _build_points(db: Path, series: dict) -> dict:
    rows = _query(db, "select series_digest, build, p20, p50, p80, runs, sources from version_points")
    return _keyed(rows, lambda r: (series[r["series_digest"]], r["build"]))


def _want_build_points(mirror: expected.Mirror) -> dict:
    return {
        (s, build): {"p20": p.p20, "p50": p.p50, "p80": p.p80, "runs": p.runs, "sources": list(p.sources)}
        for build, side in ev.build_points(mirror).items()
        for s, p in side.items()
    }


def _speedups(db: Path) -> dict:
    """Keyed by (source, Liger row, baseline row), the rows as upstream wrote them."""
    texts = _query(db, "select result_digest, source_key, row_text from fact_result")
    shown = {r["result_digest"]: (r["source_key"], tuple(next(csv.reader(io.StringIO(r["row_text"]))))) for r in texts}
    rows = _query(db, "select * from speedups")
    return _keyed(rows, lambda r: (*shown[r["liger_result_digest"]], shown[r["baseline_result_digest"]][1]))


def _want_speedups(mirror: expected.Mirror) -> dict:
    noise = ev.speedup_noise(mirror)
    out = {}
    for shown in ev.speedups(mirror):
        level = noise[shown.pairing].noise
        out[(shown.source, shown.liger.fields, shown.baseline.fields)] = {
            "speedup": shown.speedup,
            "speedup_noise": level,
            "winner": ev.winner(shown.speedup, level, 1),
        }
    return out


def _speedup_history(db: Path, series: dict) -> dict:
    rows = _query(db, "select * from speedup_history")
    return _keyed(
        rows,
        lambda r: (ev.Pairing(series[r["liger_series_digest"]], series[r["baseline_series_digest"]]), r["build"]),
    )


def _want_speedup_history(mirror: expected.Mirror) -> dict:
    history = ev.speedup_history(mirror)
    rank = {build.label: i for i, build in enumerate(ev.builds(mirror))}
    previous: dict[ev.Pairing, str] = {}
    out = {}
    for pairing, build in sorted(history, key=lambda key: rank[key[1]]):
        point, prev = history[(pairing, build)], previous.get(pairing)
        out[(pairing, build)] = {
            "speedup": point.speedup,
            "runs": point.runs,
            "sources": list(point.sources),
            "winner": point.winner,
            "prev_build": prev,
            "prev_winner": history[(pairing, prev)].winner if prev else None,
        }
        previous[pairing] = build
    return out


def _builds(db: Path) -> list[dict]:
    return _query(db, "select build, liger_version, build_kind, sources, results from dim_build order by build_rank")


def _want_builds(mirror: expected.Mirror) -> list[dict]:
    """dim_build's rows: every result a build holds (its runs' results, and for a release the
    main-branch results of its version), and what their sources are."""
    main: dict[str, list[str]] = {}
    for (_, version), points in ev.main_branch_results(mirror).items():
        main.setdefault(version, []).extend(source for _, source in points)
    out = []
    for build in ev.builds(mirror):
        sources = [run for run in build.runs for _ in mirror.sources[run][0].rows]
        sources += main.get(build.version, []) if build.kind == "release" else []
        out.append(
            {
                "build": build.label,
                "liger_version": build.version,
                "build_kind": build.kind,
                "sources": sorted(set(sources)),
                "results": len(sources),
            }
        )
    return out


# --- The whole mirror -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(mirror_warehouse) -> Path:
    return mirror_warehouse.database


# (tier, base, head): 0a62700's two runs are in the whole snapshot only (tests/conftest.py, `tier`).
RUN_PAIRS = [
    *[("cut", base, head) for base, head in [("7644a0f-v0.7.0", "7644a0f"), ("previous", "latest")]],
    *[("full", base, head) for base, head in [("7644a0f-v0.7.0", "7644a0f"), ("0a62700-v0.6.4", "0a62700")]],
    ("full", "previous", "latest"),
]


@pytest.mark.parametrize(("tier_name", "base", "head"), RUN_PAIRS)
def test_compare_runs_follows_the_rule(request, tier_name, base, head):
    db, mirror, warehouse_series = tier(request, tier_name)
    got = _comparison(db, warehouse_series, f"select * from compare_runs('{base}', '{head}')")
    recent = ev.compare_recent(mirror, base, head)
    want = {s: comparison_row(j) | recent_evidence(recent[s]) for s, j in ev.compare_runs(mirror, base, head).items()}
    assert len(want) == 2484
    assert_agree(got, want)


def test_flags_are_confirmed_or_taken_back_by_later_runs(request):
    """`confirmed_by` of the `later_runs` after the head agree with a flag; none yet: suspected."""
    db, mirror, warehouse_series = tier(request, "cut")
    base, head = "4444fdf", "7656bcb"
    got = _comparison(db, warehouse_series, f"select * from compare_runs('{base}', '{head}')")
    flags = {
        s: (r["recent_p50"], r["adjusted_change"])
        for s, r in got.items()
        if r["verdict"] in ("regression", "improvement")
    }
    # the change points are the warehouse's (tests/test_change_points.py checks them against Otava)
    shifts = _rows(
        db,
        "select c.series_digest, sign(c.after_median - c.before_median) from fact_change_point as c "
        "join dim_upstream_revision as r using (revision_digest) "
        "where r.source = 'gh-pages' and r.run = ? and c.after_points > 1",
        [head],
    )
    at_head = frozenset(
        warehouse_series[d] for d, way in shifts if (s := warehouse_series[d]) in flags and way == ev.sign(flags[s][1])
    )
    want = ev.confirmation(mirror, head, flags, at_head)
    assert {state for _, _, state in want.values()} >= {"confirmed"}
    assert all((r["change_point_pvalue"] is not None) == (s in at_head) for s, r in got.items() if s in flags)
    assert {s: (r["later_runs"], r["confirmed_by"], r["confirmation"]) for s, r in got.items() if s in flags} == want
    assert all(r["confirmation"] is None for s, r in got.items() if s not in flags)
    newest = _comparison(db, warehouse_series, "select * from compare_runs('previous', 'latest')")
    assert {r["confirmation"] for r in newest.values() if r["verdict"] == "regression"} <= {"suspected"}


@pytest.mark.parametrize("tier_name", ["cut", "full"])
def test_environment_shifts_follow_the_rule(request, tier_name):
    """The runs where Liger timings of kernels whose files did not change moved together, recomputed
    from the mirror's compare files and run steps; each shift's steps as `fact_environment_step`
    stores them."""
    db, mirror, warehouse_series = tier(request, tier_name)
    shifts = {run: direction for run, direction in _rows(db, "select run, direction from environment_shifts")}
    assert shifts == ev.environment_shifts(mirror)
    if tier_name == "full":  # the floor of small Liger workloads came at 4444fdf and went at 7656bcb
        assert {"4444fdf": "slower", "7656bcb": "faster"}.items() <= shifts.items()
    steps = _rows(db, "select series_digest, run, own_log from fact_environment_step")
    want = {(s, run): own for run in shifts for s, (own, _) in ev.environment_evidence(mirror)[run].items()}
    assert_agree(
        {(warehouse_series[d], run): {"own": own} for d, run, own in steps}, {k: {"own": v} for k, v in want.items()}
    )


def test_compare_versions_names_the_commits_between_the_builds_newest_runs(full_mirror_warehouse):
    """0.6.3 → 0.7.0 chains the ranges from d5648bf-v0.6.3 to 7644a0f, as run_range_suspects gives them."""
    db = full_mirror_warehouse.database
    got = _rows(db, "select distinct kernel, commits_between, suspect_commits from compare_versions('0.6.3', '0.7.0')")
    want = _rows(
        db, "select kernel, commits_between, suspect_commits from run_range_suspects('d5648bf-v0.6.3', '7644a0f')"
    )
    assert got and set(map(_hashable, got)) <= set(map(_hashable, want))
    assert {commits for _, commits, _ in got} == {want[0][1]} and want[0][1] > 0


def _rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_views(db) as con:
        return con.execute(sql, params).fetchall()


def _hashable(row: tuple) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def test_compare_runs_on_the_base_run_alone(full_mirror_warehouse, full_mirror, full_warehouse_series):
    """`recent := false`: the verdict stands on the base run, the recent level is only evidence."""
    db, mirror, warehouse_series = full_mirror_warehouse.database, full_mirror, full_warehouse_series
    base, head = "0a62700-v0.6.4", "0a62700"
    got = _comparison(db, warehouse_series, f"select * from compare_runs('{base}', '{head}', recent := false)")
    recent = ev.compare_recent(mirror, base, head)
    alone = ev.compare_runs(mirror, base, head, recent_level=False)
    want = {s: comparison_row(j) | recent_evidence(recent[s]) for s, j in alone.items()}
    vetoed = {s for s, j in ev.compare_runs(mirror, base, head).items() if j.verdict != alone[s].verdict}
    assert vetoed  # the pair has changes the recent level takes back
    assert_agree(got, want)


@pytest.mark.parametrize("threshold", [0.05, 0.10])
def test_compare_versions_follows_the_rule(full_mirror_warehouse, full_mirror, full_warehouse_series, threshold):
    # 0.6.3's release run is in the whole snapshot only.
    db, mirror, warehouse_series = full_mirror_warehouse.database, full_mirror, full_warehouse_series
    sql = f"select * from compare_versions('0.6.3', '0.7.0', threshold := {threshold})"
    got = _comparison(db, warehouse_series, sql)
    want = {s: comparison_row(j) for s, j in ev.compare_builds(mirror, "0.6.3", "0.7.0", threshold).items()}
    assert {j["head_sources"] == ["7644a0f", "7644a0f-v0.7.0"] for j in want.values()} == {True}
    assert_agree(got, want)


def test_compare_versions_helper_reads_release_spellings(mirror):
    assert ev.compare_versions(mirror, "v0.6.3", "7644a0f-v0.7.0") == ev.compare_versions(mirror, "0.6.3", "0.7.0")


@pytest.mark.parametrize(("tier_name", "count"), [("cut", 5347), ("full", 9927)])
def test_series_noise_follows_the_rule(request, tier_name, count):
    db, mirror, warehouse_series = tier(request, tier_name)
    want = _want_series_noise(mirror)
    assert len(want) == count
    assert_agree(_series_noise(db, warehouse_series), want)


@pytest.mark.parametrize(("tier_name", "count"), [("cut", 20406), ("full", 54422)])
def test_regressions_judge_every_step_between_builds(request, tier_name, count):
    """Every step (54,422 in the whole snapshot), not a sample: the recomputation takes seconds."""
    db, mirror, warehouse_series = tier(request, tier_name)
    want = _want_regressions(mirror)
    assert len(want) == count
    assert_agree(_regressions(db, warehouse_series), want)


FLAGS = ("regression", "improvement", "changed", "environment")


def _build_confirmation(mirror: expected.Mirror, key: tuple, judged: ev.Judged) -> dict:
    """The next CONFIRM_RUNS builds of the series after the step's head: how many hold a positive
    p50, how many of those lie beyond the threshold from the base p50 the flag's way."""
    series, _, head = key
    history = ev.build_histories(mirror)[series]
    points = ev.build_points(mirror)
    later = [p for b in history[history.index(head) + 1 :][: ev.CONFIRM_RUNS] if (p := points[b][series].p50) > 0]
    agree = sum(
        abs(math.log(p / judged.base.p50)) > math.log1p(ev.THRESHOLD)
        and ev.sign(math.log(p / judged.base.p50)) == ev.sign(judged.adjusted_change)
        for p in later
    )
    state = "confirmed" if later and 2 * agree > len(later) else ("retracted" if later else "suspected")
    return {"later_builds": len(later), "confirmed_by": agree, "confirmation": state}


@pytest.mark.parametrize("tier_name", ["cut", "full"])
def test_regressions_flags_are_confirmed_by_the_builds_after_them(request, tier_name):
    """Each flag of `regressions` against the builds after its head; other rows carry nothing.
    A filter on one kernel and GPU answers exactly that kernel's rows of the whole view."""
    db, mirror, warehouse_series = tier(request, tier_name)
    got = _regressions(db, warehouse_series)
    columns = ("later_builds", "confirmed_by", "confirmation")
    want = {
        key: _build_confirmation(mirror, key, judged) if judged.verdict in FLAGS else dict.fromkeys(columns)
        for key, judged in ev.regressions(mirror).items()
    }
    assert {w["confirmation"] for w in want.values()} >= {"confirmed", "retracted", None}
    assert_agree({key: {c: row[c] for c in columns} for key, row in got.items()}, want)
    kernel, gpu = next((r["kernel"], r["gpu"]) for r in got.values() if r["confirmation"] == "confirmed")
    filtered = _query(db, "select * from regressions where kernel = ? and gpu = ?", [kernel, gpu])
    whole = [r for r in got.values() if (r["kernel"], r["gpu"]) == (kernel, gpu)]
    assert sorted(map(_hashable, (tuple(r.values()) for r in filtered))) == sorted(
        map(_hashable, (tuple(r.values()) for r in whole))
    )


def test_version_history_carries_the_regressions_verdicts(db, mirror, warehouse_series):
    rows = _query(db, "select series_digest, build, prev_build, verdict from version_history where point > 1")
    got = _keyed(rows, lambda r: (warehouse_series[r["series_digest"]], r["prev_build"], r["build"]))
    want = {key: {"verdict": judged.verdict} for key, judged in ev.regressions(mirror).items()}
    assert_agree(got, want)


def test_build_points_stand_on_the_builds_runs(db, mirror, warehouse_series):
    assert_agree(_build_points(db, warehouse_series), _want_build_points(mirror))


def test_builds_in_order_with_their_labels(db, mirror):
    assert _builds(db) == _want_builds(mirror)


def test_builds_of_the_whole_snapshot_in_order_with_their_labels(full_mirror_warehouse, full_mirror):
    got, want = _builds(full_mirror_warehouse.database), _want_builds(full_mirror)
    assert got == want
    labels = [b["build"] for b in got]
    assert labels.index("0.6.4") < labels.index("0.6.4+20251205.3d075fd") < labels.index("0.6.5")
    release = {b["build"]: b["sources"] for b in got}["0.6.4"]
    assert release == ["0a62700", "0a62700-v0.6.4"], "a release stands on its release run and same-commit runs"


@pytest.mark.parametrize(("tier_name", "count"), [("cut", 17040), ("full", 39989)])
def test_speedup_winners_follow_the_pairings_noise(request, tier_name, count):
    db, mirror, _ = tier(request, tier_name)
    want = _want_speedups(mirror)
    assert len(want) == count
    assert_agree(_speedups(db), want)


def test_speedup_noise_of_every_pairing_with_runs(db, mirror, warehouse_series):
    rows = _query(db, "select * from fact_speedup_noise")
    series = warehouse_series
    got = _keyed(rows, lambda r: ev.Pairing(series[r["liger_series_digest"]], series[r["baseline_series_digest"]]))
    want = {
        p: {"history": n.history, "spread": n.spread, "pool": n.pool, "noise": n.noise}
        for p, n in ev.speedup_noise(mirror).items()
        if n.runs
    }
    assert_agree(got, want)


def test_speedup_history_follows_the_rule(db, mirror, warehouse_series):
    assert_agree(_speedup_history(db, warehouse_series), _want_speedup_history(mirror))


# --- Histories worked out by hand -------------------------------------------------------------
#
# Nine nightly runs of 0.9.0 on one GPU. rms_norm and layer_norm forward, each at three hidden
# sizes, Liger (1, 2, 4 ms) and torch (3x that); rms_norm memory, Liger (100, 200, 400 MB)
# and torch (3x). Runs 1-7 repeat those numbers, except that the whole Liger rms_norm speed
# sweep is 10% slower in runs 2, 4 and 6: a sweep known to jump. Then:
#   run 8: the Liger rms_norm speed sweep 20% slower than run 7 (all three sizes), Liger
#          layer_norm 20% slower at 4096 only, Liger rms_norm memory 10% more at 4096 only, and
#          a new Liger swiglu series appears;
#   run 9: every speed row 8% slower than run 8, Liger and torch alike (host drift).
# Main branch: one swiglu row of 0.8.0.

HAND_RUNS = [f"a{i:06x}" for i in range(1, 10)]
SIZES = {1024: 1.0, 2048: 2.0, 4096: 4.0}


def _hand_run(day: int, jumpy: float = 1.0, one_size: float = 1.0, memory: float = 1.0, host: float = 1.0):
    stamp = f"2026-02-{day:02d} 01:00:00"
    rows = []
    for hidden, ms in SIZES.items():
        at_4096 = hidden == 4096
        rows += [
            row("liger", ms * jumpy * host, "0.9.0", stamp, "rms_norm", hidden=hidden),
            row("torch", 3 * ms * host, "0.9.0", stamp, "rms_norm", hidden=hidden),
            row("liger", ms * (one_size if at_4096 else 1.0) * host, "0.9.0", stamp, "layer_norm", hidden=hidden),
            row("torch", 3 * ms * host, "0.9.0", stamp, "layer_norm", hidden=hidden),
            row("liger", 100 * ms * (memory if at_4096 else 1.0), "0.9.0", stamp, hidden=hidden, metric="memory"),
            row("torch", 300 * ms, "0.9.0", stamp, hidden=hidden, metric="memory"),
        ]
    if day >= 8:
        rows.append(row("liger", 1.0 * host, "0.9.0", stamp, "swiglu"))
    return rows


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> tuple[Path, expected.Mirror]:
    root = tmp_path_factory.mktemp("hand")
    runs = {run: _hand_run(day, jumpy=1.1 if day % 2 == 0 else 1.0) for day, run in enumerate(HAND_RUNS[:7], 1)}
    runs[HAND_RUNS[7]] = _hand_run(8, jumpy=1.2, one_size=1.2, memory=1.1)
    runs[HAND_RUNS[8]] = _hand_run(9, jumpy=1.2, one_size=1.2, memory=1.1, host=1.08)
    main = [[row("liger", 1.0, "0.8.0", "2026-01-01 01:00:00", "swiglu")]]
    mirror = write_mirror(root / "mirror", main, runs)
    built = refresh(root / "warehouse", upstream=str(mirror))
    assert built.result.success
    return built.database, expected.read_mirror(mirror)


# The noise, by hand. Residuals are 0 at every step of every series (whole sweeps move, or the
# one series that moves is outvoted by its sweep's median), so every residual spread and pool
# is 0. The jumpy sweep's own shifts over its 8 steps are ln 1.1 six times, ln 1.2 (run 8) and
# 0 (run 9: the host drift is taken out): the 75th percentile is ln 1.1. The layer_norm sweep
# never shifts (run 8 moves one size of three). The Liger speed pool is the median of the two
# sweeps with 5 steps or more: half the jumpy one's spread; baselines and memory pool to 0.
JUMPY_SPREAD = math.log(1.1) / NormalDist().inv_cdf(0.875)
LIGER_SPEED_POOL = JUMPY_SPREAD / 2
JUMPY_NOISE = math.sqrt((8 * JUMPY_SPREAD**2 + 10 * LIGER_SPEED_POOL**2) / 18)  # 0.0633
QUIET_NOISE = math.sqrt(10 * LIGER_SPEED_POOL**2 / 18)  # 0.0309
SWIGLU_NOISE = math.sqrt(10 * LIGER_SPEED_POOL**2 / 11)  # one step, alone in its sweep


def _hand_rows(db: Path, sql: str) -> dict[tuple, dict]:
    """(kernel, metric, provider, hidden size) -> the row."""
    series = {digest: ev.Series(*key) for digest, key in series_keys(db).items()}

    def key(r: dict) -> tuple:
        s = series[r["series_digest"]]
        return (s.kernel, s.metric, s.provider, int(s.x_value))

    return _keyed(_query(db, sql), key)


def test_hand_noise(hand):
    db, _ = hand
    rows = _hand_rows(db, "select * from series_noise")
    jumpy, quiet = rows[("rms_norm", "speed", "liger", 2048)], rows[("layer_norm", "speed", "liger", 2048)]
    assert (jumpy["history"], jumpy["sweep_history"]) == (8, 8)
    assert jumpy["sweep_spread"] == pytest.approx(JUMPY_SPREAD, rel=1e-9)
    assert (jumpy["residual_noise"], jumpy["noise"]) == (0.0, pytest.approx(JUMPY_NOISE, rel=1e-9))
    assert quiet["noise"] == pytest.approx(QUIET_NOISE, rel=1e-9)
    swiglu = rows[("swiglu", "speed", "liger", 4096)]
    assert (swiglu["history"], swiglu["noise"]) == (1, pytest.approx(SWIGLU_NOISE, rel=1e-9))
    assert rows[("rms_norm", "memory", "liger", 4096)]["noise"] == 0.0
    assert jumpy["detectable_change"] == pytest.approx(math.exp(5 * JUMPY_NOISE) - 1, rel=1e-9)


def test_hand_sweep_shift_against_a_single_workload_move(hand):
    """Run 7 -> 8: the jumpy sweep's 20% shift is within 5 of its noise scales and too big to
    call unchanged: inconclusive. The quiet sweep's 4096 moved 20% against its sweep, whose
    residual noise is 0: a regression; its neighbours did not move: unchanged."""
    db, _ = hand
    rows = _hand_rows(db, f"select * from compare_runs('{HAND_RUNS[6]}', '{HAND_RUNS[7]}')")
    jumpy = rows[("rms_norm", "speed", "liger", 1024)]
    # |d| = ln 1.2 = 0.182 < 5 * 0.0633; ln 1.2 + 1.645 * 0.0633 = 0.287 > ln 1.25 = 0.223
    assert jumpy["verdict"] == "inconclusive"
    assert jumpy["change"] == jumpy["adjusted_change"] == jumpy["sweep_change"] == pytest.approx(0.2, rel=1e-9)
    assert (jumpy["drift"], jumpy["noise"]) == (pytest.approx(0.0, abs=1e-12), pytest.approx(JUMPY_NOISE, rel=1e-9))
    assert jumpy["z"] == pytest.approx(math.log(1.2) / JUMPY_NOISE, rel=1e-9)  # 2.88
    moved = rows[("layer_norm", "speed", "liger", 4096)]
    assert (moved["verdict"], moved["sweep_change"]) == ("regression", pytest.approx(0.0, abs=1e-12))
    assert moved["z"] == pytest.approx(math.log(1.2) / QUIET_NOISE, rel=1e-9)  # 5.9
    # the neighbours: 0 + 1.645 * 0.0309 <= ln 1.25, and 8 steps of history
    assert rows[("layer_norm", "speed", "liger", 1024)]["verdict"] == "unchanged"


def test_hand_deterministic_memory_change(hand):
    db, _ = hand
    rows = _hand_rows(db, f"select * from compare_runs('{HAND_RUNS[6]}', '{HAND_RUNS[7]}')")
    grown = rows[("rms_norm", "memory", "liger", 4096)]
    assert (grown["verdict"], grown["noise"], grown["z"]) == ("regression", 0.0, None)
    assert grown["change"] == pytest.approx(0.1, rel=1e-9)
    assert rows[("rms_norm", "memory", "liger", 2048)]["verdict"] == "unchanged"


def test_hand_host_drift_shared_by_the_baselines(hand):
    """Run 8 -> 9: everything 8% slower. The baselines explain all of it: unchanged (the old
    rule, 5% and apart bands, called every speed series a regression). swiglu has one run step
    of history: its noise stands on the pools of its kind, so a change within the threshold is
    unchanged too (beyond it, only `min_history` steps could say so)."""
    db, _ = hand
    rows = _hand_rows(db, f"select * from compare_runs('{HAND_RUNS[7]}', '{HAND_RUNS[8]}')")
    for key in [("rms_norm", "speed", "liger", 1024), ("layer_norm", "speed", "liger", 4096)]:
        drifted = rows[key]
        assert drifted["verdict"] == "unchanged"
        assert drifted["change"] == drifted["drift"] == pytest.approx(0.08, rel=1e-9)
        assert drifted["adjusted_change"] == pytest.approx(0.0, abs=1e-12)
    swiglu = rows[("swiglu", "speed", "liger", 4096)]
    assert (swiglu["verdict"], swiglu["history"], swiglu["drift"]) == ("unchanged", 1, pytest.approx(0.08))


def test_hand_mirror_follows_the_rule_everywhere(hand):
    """The same comparisons as on the real mirror, on every run step of the hand history."""
    db, mirror = hand
    series = series_keys(db)
    for base, head in pairwise(HAND_RUNS):
        got = _comparison(db, series, f"select * from compare_runs('{base}', '{head}')")
        assert_agree(got, {s: comparison_row(j) for s, j in ev.compare_runs(mirror, base, head).items()})
    assert_agree(_series_noise(db, series), _want_series_noise(mirror))
    assert_agree(_regressions(db, series), _want_regressions(mirror))
    assert_agree(_build_points(db, series), _want_build_points(mirror))
    assert _builds(db) == _want_builds(mirror)
    assert_agree(_speedups(db), _want_speedups(mirror))
    assert_agree(_speedup_history(db, series), _want_speedup_history(mirror))


def test_the_sweep_scale_matches_the_sweep_quantile(db):
    """`verdict_rule()` names a quantile and the normal scale it is divided by: they go together."""
    with open_views(db) as con:
        rule = con.execute("select verdict_rule()").fetchone()[0]
    want = NormalDist().inv_cdf((1 + float(rule["sweep_quantile"])) / 2)
    assert rule["sweep_scale"] == pytest.approx(want, rel=1e-12)


def test_latest_and_previous_name_the_newest_runs_builds(db):
    with open_views(db) as con:
        latest, previous = con.execute("select build_name('latest'), build_name('previous')").fetchone()
        runs = con.execute("select run from dim_upstream_revision where source = 'gh-pages' order by seq desc")
        newest = [r for (r,) in runs.fetchall()]
        # The newest run is a run of 0.7.0's commit; the newest of another build is two runs older.
        assert latest == "0.7.0" and newest[:2] == ["7644a0f", "7644a0f-v0.7.0"]
        assert previous == con.execute("select build_name(?)", [newest[2]]).fetchone()[0] == "0.6.5+20260206.1fdb668"
        assert con.execute("select count(*) from compare_versions('previous', 'latest')").fetchone()[0] > 2000
