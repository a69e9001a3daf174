"""The verdict benchmark's machinery on a tiny history, so that it keeps working (issue 12).
The full run is ``python -m benchmarks.verdicts --write`` (docs/VERDICTS.md); no timing is
asserted here."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import random
import statistics
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import verdict_losses, verdict_report, verdicts
from benchmarks.verdict_inject import DRIFT, FASTER, SLOWER, Injection, injected_csv, mirror_until
from benchmarks.verdict_rules import Case, Point, lookback_z, lookback_z_rule, old_rule, otava_rule
from liger_warehouse.upstream.sources import RUNS_PATH
from tests.tiny_mirror import row, write_mirror

pytestmark = pytest.mark.slow

KERNELS = ("rms_norm", "swiglu", "geglu", "layer_norm", "rope")
PROVIDERS = ("liger", "torch")
WIDTHS = (1024, 2048, 4096)
RUNS = ("aaaa001", "aaaa002", "aaaa003", "aaaa004", "aaaa005", "aaaa006", "bbbb007-v1.0.0", "bbbb007")
PAIR = ("bbbb007-v1.0.0", "bbbb007")


def _rows(run: int, rng: random.Random) -> list[list[str]]:
    """One run: every kernel, pass, provider, metric and width; speed moves a few percent
    between runs, memory not at all."""
    out = []
    for kernel in KERNELS:
        for mode in ("forward", "backward"):
            for provider in PROVIDERS:
                for metric, unit in (("speed", "ms"), ("memory", "MB")):
                    for width in WIDTHS:
                        level = width / 1024 * (2.0 if provider == "torch" else 1.0)
                        p50 = level * (math.exp(rng.gauss(0, 0.03)) if metric == "speed" else 1.0)
                        r = row(provider, p50, "1.0.0", f"2026-02-{run + 1:02d} 01:00:00", kernel=kernel)
                        r[2], r[3], r[4], r[7] = mode, metric, unit, str(width)
                        out.append(r)
    return out


@pytest.fixture(scope="module")
def tiny_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(12)
    runs = {run: _rows(i, rng) for i, run in enumerate(RUNS)}
    runs["bbbb007"] = [[*r[:13], "2026-02-09 01:00:00", r[14]] for r in _rows(7, rng)]
    root = write_mirror(tmp_path_factory.mktemp("tiny"), [runs["aaaa001"]], runs)
    golden = {"default_commit": "aaaa001", "golden_commits": {"rms_norm": "aaaa002"}}
    (root / "gh-pages" / "benchmarks" / "golden_commits.json").write_text(json.dumps(golden))
    return root


def _points(mirror: Path, run: str) -> dict[tuple, tuple[float, float, float]]:
    data = gzip.decompress((mirror / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz").read_bytes()).decode()
    return {
        (r[0], r[1], r[2], r[3], r[7]): (float(r[9]), float(r[8]), float(r[10]))
        for r in list(csv.reader(io.StringIO(data)))[1:]
    }


def _old_rule_flags(mirror: Path, base: str, head: str) -> int:
    """The old rule recomputed from the two CSV files."""
    b, h = _points(mirror, base), _points(mirror, head)
    flagged = 0
    for key in b.keys() & h.keys():
        (b20, b50, b80), (h20, h50, h80) = b[key], h[key]
        flagged += not (h20 <= b80 and b20 <= h80) and abs(h50 / b50 - 1) > 0.05
    return flagged


def test_the_benchmark_runs_on_a_tiny_history_and_writes_its_section(tiny_history, tmp_path):
    doc = tmp_path / "VERDICTS.md"
    doc.write_text("# Verdicts\n\nkept as is\n\n## How well it works\n\nplaceholder\n")
    args = ["--mirror", str(tiny_history), "--pairs", ":".join(PAIR), "--seeds", "1", "--latency-runs", "1",
            "--grid", "smoke"]  # fmt: skip
    results = verdicts.main([*args, "--work", str(tmp_path / "work"), "--write", "--doc", str(doc)])

    text = doc.read_text()
    assert text.startswith("# Verdicts\n\nkept as is\n\n") and "placeholder" not in text
    assert text.count(verdict_report.HEADING) == 1 and verdict_report.BEGIN in text and verdict_report.END in text
    for heading in ("False positives", "Recall: single workloads", "Recall: whole sweeps", "Coverage", "Targets",
                    "Sensitivity to the constants", "`compare_runs` latency", "The significance dial",
                    "At equal recall"):  # fmt: skip
        assert f"### {heading}" in text
    command = "python -m benchmarks.verdicts --write --pairs bbbb007-v1.0.0:bbbb007 --seeds 1 --latency-runs 1"
    assert f"`{command} --grid smoke`" in text
    assert "at the thresholds 7% and, at each of 5% and 7%, on the base run alone" in " ".join(text.split())
    assert "/tmp" not in text and str(tmp_path) not in text
    assert (tmp_path / verdict_report.PLOT).read_bytes().startswith(b"\x89PNG")
    again = verdict_report.replace_section(text, "## How well it works\n\nnew\n")
    assert again.startswith("# Verdicts\n\nkept as is\n\n") and again.count("How well it works") == 1

    # The scratch copy's noise recomputed with the default constants is the published one.
    assert results.default_mismatches == 0
    compared = len(_points(tiny_history, PAIR[0]).keys() & _points(tiny_history, PAIR[1]).keys())
    same = {r.rule: r.tally for r in results.records if r.experiment == "identical"}
    assert set(same) >= {*verdicts.ANCHOR_RULES, verdicts.NEW, verdicts.AS_OF_HEAD, verdicts.HELD_OUT}
    assert all(sum(t.values()) == compared for t in same.values())
    assert verdict_report.flagged(same["old rule"]).part == _old_rule_flags(tiny_history, *PAIR) > 0

    liger = compared // len(PROVIDERS)
    injected = [r for r in results.records if r.experiment != "identical" and r.rule == verdicts.NEW]
    assert len(injected) == 4  # one seed: two scopes, with and without drift
    for record in injected:
        truth = Counter(t for (_, t, _), n in record.tally.items() for _ in range(n))
        if record.experiment == "workload":
            assert truth == {"slower": round(0.1 * liger), "faster": round(0.05 * liger),
                             "untouched": compared - round(0.15 * liger)}  # fmt: skip
        else:  # whole sweeps of three workloads
            assert truth["slower"] == 3 * round(0.1 * liger / 3) and truth["faster"] == 3 * round(0.05 * liger / 3)


def test_injected_csv_scales_the_chosen_series_and_every_speed_row_only():
    stamp = "2026-02-01 01:00:00"
    rows = [row("liger", 1.0, "1.0.0", stamp), row("liger", 2.0, "1.0.0", stamp), row("torch", 4.0, "1.0.0", stamp),
            row("liger", 8.0, "1.0.0", stamp)]  # fmt: skip
    rows[3][3], rows[3][4] = "memory", "MB"
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows([("kernel_name", "kernel_provider", "kernel_operation_mode",
        "metric_name", "metric_unit", "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
        "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version"), *rows])  # fmt: skip
    original = out.getvalue().encode()
    lines = {2: "slow", 3: "fast", 4: "baseline", 5: "memory"}
    injection = Injection(frozenset({"slow", "memory"}), frozenset({"fast"}))

    calm = injected_csv(original, lines, injection, 1.0)
    drifted = injected_csv(original, lines, injection, DRIFT)
    assert calm.count(b"\r\n") == original.count(b"\r\n")
    parsed = [list(csv.reader(io.StringIO(x.decode())))[1:] for x in (original, calm, drifted)]
    for (before, after_calm, after_drift), factor in zip(zip(*parsed, strict=True), (SLOWER, FASTER, 1.0, SLOWER),
                                                         strict=True):  # fmt: skip
        speed = before[3] == "speed"
        for column in (8, 9, 10):
            assert float(after_calm[column]) == pytest.approx(float(before[column]) * factor, rel=1e-12)
            expected = float(before[column]) * factor * (DRIFT if speed else 1.0)
            assert float(after_drift[column]) == pytest.approx(expected, rel=1e-12)
        assert after_calm[:8] == before[:8] and after_calm[11:] == before[11:]
    assert parsed[1][2] == parsed[0][2]  # the untouched baseline keeps its text
    with pytest.raises(RuntimeError, match="no row"):
        injected_csv(original, lines, Injection(frozenset({"absent"}), frozenset()), 1.0)


def _case(prior: list[float], head: float, base: float | None = None) -> Case:
    b = prior[-1] if base is None else base
    return Case("s", True, Point(b * 0.99, b, b * 1.01), Point(head * 0.99, head, head * 1.01), tuple(prior), None)


def test_anchor_rules_against_a_direct_computation():
    rng = random.Random(3)
    quiet = [1.0 + rng.gauss(0, 0.01) for _ in range(20)]
    z = (1.2 - statistics.mean(quiet)) / statistics.stdev(quiet)
    assert lookback_z(1.2, tuple(quiet)) == pytest.approx(z)
    assert lookback_z_rule(_case(quiet, 1.2)) == "regression" and z > 5
    assert lookback_z_rule(_case(quiet, quiet[-1])) == "unchanged"
    assert lookback_z(2.0, (1.0, 1.0, 1.0)) == 0.0  # no spread: z = 0, as Conbench sets it
    assert lookback_z_rule(_case([1.0], 2.0)) is None

    assert otava_rule(_case(quiet, 1.2)) == "regression"
    assert otava_rule(_case(quiet, 0.8)) == "improvement"
    assert otava_rule(_case(quiet, quiet[-1])) == "unchanged"
    # After a level shift, the head is judged against the runs since the change point only.
    shifted = quiet[:10] + [x + 0.3 for x in quiet[10:]]
    assert otava_rule(_case(shifted, 1.3)) == "unchanged"
    assert lookback_z_rule(_case(shifted, 1.3)) == "unchanged"  # its spread hides everything
    assert otava_rule(_case(shifted, 1.0)) == "improvement"

    assert old_rule(_case(quiet, 1.2, base=1.0)) == "regression"
    assert old_rule(_case(quiet, 1.04, base=1.0)) == "unchanged"  # under 5%
    overlapping = Case("s", True, Point(0.5, 1.0, 1.5), Point(0.6, 1.2, 1.6), (), None)
    assert old_rule(overlapping) == "unchanged"


def test_losses_count_each_injected_series_once_and_promote_only_agreeing_inconclusives():
    rows = [
        ("s1", "regression", "regression", "regression", False),
        ("s2", "inconclusive", "inconclusive", "regression", True),
        ("f1", "inconclusive", "improvement", "unchanged", False),
        ("u1", "inconclusive", "inconclusive", "improvement", True),
        ("u2", "unchanged", "unchanged", "unchanged", False),
    ]
    counted = verdict_losses._count(rows, {"s1": "slower", "s2": "slower", "f1": "faster"})
    assert sum(counted["injected"].values()) == 3
    assert counted["injected"]["faster: inconclusive / base run alone improvement / recent level unchanged"] == 1
    assert counted["flags"] == {
        "faster series": 1, "faster flagged": 0, "faster flagged with promote": 0,
        "slower series": 2, "slower flagged": 1, "slower flagged with promote": 2,
        "untouched series": 2, "untouched flagged": 0, "untouched flagged with promote": 1,
    }  # fmt: skip


def test_a_history_until_a_head_lists_the_runs_up_to_it_and_leaves_the_mirror_alone(tmp_path):
    mirror = tmp_path / "mirror"
    runs = mirror / "gh-pages" / RUNS_PATH
    runs.parent.mkdir(parents=True)
    runs.write_text("aaaa001\naaaa002\naaaa003\n")
    cut = mirror_until(mirror, tmp_path / "cut", "aaaa002")
    assert (cut / "gh-pages" / RUNS_PATH).read_text().split() == ["aaaa001", "aaaa002"]
    assert runs.read_text().split() == ["aaaa001", "aaaa002", "aaaa003"]


def test_losses_name_where_each_injected_series_went_and_pool_over_draws():
    rows = [
        ("s1", "regression", "regression", "regression", False),
        ("s2", "inconclusive", "regression", "unchanged", False),
        ("f1", "unchanged", "inconclusive", "unchanged", False),
    ]
    counted = verdict_losses._count(rows, {"s1": "slower", "s2": "slower", "f1": "faster"})
    assert counted["losses"] == {
        "found": 1,
        "found on the base run, taken back to inconclusive by the recent level": 1,
        "inconclusive on the base run alone": 1,
    }
    assert verdict_losses.pooled([counted, counted], "losses")["found"] == 2
