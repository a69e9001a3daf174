"""The verdict rule of docs/VERDICTS.md, recomputed in plain Python from the raw mirror CSVs.

Rows come from tests/expected.py's reader (csv + gzip); nothing here imports the project or
reads its SQL, so a test comparing these answers with the warehouse's checks the SQL against
an independent reading of the document. Each step below names the section of docs/VERDICTS.md
it follows. Changes are natural logs of ratios throughout, as in the document.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from itertools import pairwise
from statistics import NormalDist
from typing import NamedTuple

from packaging.version import Version

from tests.expected import Mirror, Row

THRESHOLD = 0.05
LOWER_IS_BETTER = {"ms", "mb"}  # units, lower-cased
# The constants of "The verdict", "Each series' noise" and "Speedups".
SIGNIFICANCE = 5  # K
EQUIVALENCE = 0.25  # E
CONFIDENCE_Z = 1.645  # q
DOUBT = 3
MIN_HISTORY = 5
PRIOR_STEPS = 10
SWEEP_QUANTILE = 0.75
SPEEDUP_Z = 3
RECENT_RUNS = 5  # a run's recent level: the median of it and the runs before it, this many
CONFIRM_RUNS = 3  # the runs after a flag's head that confirm it or take it back
ENVIRONMENT_MOVE = 0.05  # a series moved in a run step when its own change is beyond this ...
ENVIRONMENT_SHARE = 0.05  # a run is an environment shift when this share of the series judged moved one way
ENVIRONMENT_KERNELS = 3  # ... from this many kernels at least
# For normal noise, the q-quantile of |x| is the (1 + q) / 2 normal quantile times the standard
# deviation: median(|x|) / 0.6745 and q75(|x|) / 1.1503 estimate it.
MAD_SCALE = NormalDist().inv_cdf(0.75)
SWEEP_SCALE = NormalDist().inv_cdf((1 + SWEEP_QUANTILE) / 2)

RELEASE_RUN = re.compile(r"(?P<commit>[0-9a-f]+)-v(?P<version>.+)")


class Series(NamedTuple):
    """One kernel, pass, provider, backend, metric, GPU and workload of one benchmark suite
    across versions; equal to the plain tuple ``tests.expected.Row.series``."""

    kernel: str
    mode: str
    provider: str
    backend: str | None  # none for a baseline
    metric: str
    unit: str
    gpu: str
    x_name: str
    x_label: str
    x_value: str
    config: str
    harness: str  # the benchmark suite: the upstream file

    @property
    def is_liger(self) -> bool:
        return self.provider.startswith("liger")

    @property
    def sweep(self) -> tuple:
        """Every workload of the same kernel, pass, provider, backend, metric, GPU and suite."""
        return (self.kernel, self.mode, self.provider, self.backend, self.metric, self.gpu, self.harness)

    @property
    def kernel_group(self) -> tuple:
        """The sweep without the provider and its backend: what Liger and its baselines share."""
        return (self.kernel, self.mode, self.metric, self.gpu, self.harness)

    @property
    def host_group(self) -> tuple:
        return (self.gpu, self.metric)

    @property
    def pool(self) -> tuple:
        """Whose noise a short history is shrunk toward: the metric, Liger or baseline."""
        return (self.metric, self.is_liger)


@cache
def series_of(row: Row) -> Series:
    return Series(*row.series)


@dataclass(frozen=True)
class Point:
    """What stands for a series on one side: medians over ``runs`` points named by ``sources``."""

    p20: float
    p50: float
    p80: float
    runs: int
    sources: tuple[str, ...]  # distinct, sorted by name


Side = dict[Series, Point]


def median_point(points: list[tuple[Row, str]]) -> Point:
    """The median p20, p50 and p80 of (result, source) pairs."""
    if len(points) == 1:
        ((row, source),) = points
        return Point(*row.quantiles(), 1, (source,))
    quantiles = [row.quantiles() for row, _ in points]
    p20, p50, p80 = (statistics.median(q[i] for q in quantiles) for i in range(3))
    return Point(p20, p50, p80, len(points), tuple(sorted({source for _, source in points})))


# --- Sides: runs and builds ("Terms") ---------------------------------------------------------


@cache
def run_rows(mirror: Mirror) -> dict[str, dict[Series, Row]]:
    """run -> series -> the most recently observed result of the series in the run."""
    out: dict[str, dict[Series, Row]] = {}
    for run in mirror.run_order:
        newest: dict[Series, Row] = {}
        for row in mirror.sources[run][0].rows:
            held = newest.get(series_of(row))
            if held is None or row.observed > held.observed:
                newest[series_of(row)] = row
        out[run] = newest
    return out


@cache
def run_points(mirror: Mirror) -> dict[str, Side]:
    """run -> series -> its point in that run (one run, named by the run)."""
    return {run: {s: median_point([(row, run)]) for s, row in rows.items()} for run, rows in run_rows(mirror).items()}


@dataclass(frozen=True)
class Build:
    label: str
    version: str
    kind: str  # "release" or "nightly"
    runs: tuple[str, ...]  # the gh-pages runs it stands on, in run order


def run_version(mirror: Mirror, run: str) -> str:
    versions = {row.version for row in mirror.sources[run][0].rows}
    assert len(versions) == 1, f"run {run} holds several versions: {versions}"
    return versions.pop()


def main_branch_sources(mirror: Mirror) -> list[str]:
    """The CSV paths of the main branch (every other source is a gh-pages run)."""
    return [source for source in mirror.sources if source not in mirror.run_order]


@cache
def builds(mirror: Mirror) -> list[Build]:
    """Every build in ``build_rank`` order: release order, each release before its nightlies,
    the nightlies in upstream run order."""
    release_commits: dict[str, str] = {}  # commit -> version of its release run
    for run in mirror.run_order:
        if match := RELEASE_RUN.fullmatch(run):
            release_commits[match["commit"]] = match["version"]
    released: dict[str, list[str]] = defaultdict(list)  # version -> its release and same-commit runs
    nightlies: list[Build] = []
    for run in mirror.run_order:
        commit = run.split("-v")[0]
        if commit in release_commits:
            released[release_commits[commit]].append(run)
            continue
        version = run_version(mirror, run)
        first_day = min(row.observed for row in mirror.sources[run][0].rows).strftime("%Y%m%d")
        nightlies.append(Build(f"{version}+{first_day}.{run}", version, "nightly", (run,)))
    main_versions = {row.version for s in main_branch_sources(mirror) for rev in mirror.sources[s] for row in rev.rows}
    releases = [Build(v, v, "release", tuple(released.get(v, ()))) for v in main_versions | set(released)]
    run_order = {run: index for index, run in enumerate(mirror.run_order)}
    return sorted(
        releases + nightlies,
        key=lambda b: (Version(b.version), b.kind == "nightly", run_order[b.runs[0]] if b.runs else -1),
    )


@cache
def main_branch_results(mirror: Mirror) -> dict[tuple[Series, str], list[tuple[Row, str]]]:
    """(series, version) -> every main-branch result of that version, with the short commit of
    the revision that first showed it."""
    out: dict[tuple[Series, str], dict[Row, str]] = defaultdict(dict)
    for source in main_branch_sources(mirror):
        for revision in mirror.sources[source]:
            for row in revision.rows:
                out[(series_of(row), row.version)].setdefault(row, revision.label[:7])
    return {key: list(first_seen.items()) for key, first_seen in out.items()}


@cache
def build_points(mirror: Mirror) -> dict[str, Side]:
    """build label -> series -> its point: the median over the build's runs that hold the
    series, else (a release) over the main-branch results of that version."""
    rows_by_run = run_rows(mirror)
    fallback: dict[str, dict[Series, list[tuple[Row, str]]]] = defaultdict(dict)
    for (series, version), points in main_branch_results(mirror).items():
        fallback[version][series] = points
    out: dict[str, Side] = {}
    for build in builds(mirror):
        held: dict[Series, list[tuple[Row, str]]] = defaultdict(list)
        for run in build.runs:
            for series, row in rows_by_run[run].items():
                held[series].append((row, run))
        if build.kind == "release":
            for series, points in fallback[build.version].items():
                held.setdefault(series, points)
        out[build.label] = {series: median_point(points) for series, points in held.items()}
    return out


# --- The change and its parts -----------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    change: float  # c
    host_drift: float  # h
    adjusted: float  # a = c - h
    kernel_drift: float | None  # k
    own: float  # o
    sweep_shift: float  # s
    sweep_own: float  # d
    residual: float  # r = a - s
    sweep_size: int  # series of the sweep on both sides


def median_by(values: dict[Series, float], group: Callable[[Series], tuple]) -> dict[tuple, float]:
    """group -> the median value of its series."""
    grouped: dict[tuple, list[float]] = defaultdict(list)
    for series, value in values.items():
        grouped[group(series)].append(value)
    return {key: statistics.median(vs) for key, vs in grouped.items()}


def decompose(base: Side, head: Side) -> dict[Series, Parts]:
    """Every series on both sides with p50 > 0 on both, its change split into what the
    baselines explain, what its sweep shares and what is its own."""
    both = [s for s in base.keys() & head.keys() if base[s].p50 > 0 and head[s].p50 > 0]
    change = {s: math.log(head[s].p50 / base[s].p50) for s in both}
    host_drift = median_by({s: c for s, c in change.items() if not s.is_liger}, lambda s: s.host_group)
    adjusted = {s: c - host_drift.get(s.host_group, 0.0) for s, c in change.items()}
    kernel_drift = median_by({s: a for s, a in adjusted.items() if not s.is_liger}, lambda s: s.kernel_group)
    sweep_shift = median_by(adjusted, lambda s: s.sweep)
    sweep_size = Counter(s.sweep for s in both)
    out = {}
    for s in both:
        k = kernel_drift.get(s.kernel_group) if s.is_liger else None  # absent: nothing to take out
        a, shift = adjusted[s], sweep_shift[s.sweep]
        out[s] = Parts(
            change=change[s],
            host_drift=host_drift.get(s.host_group, 0.0),
            adjusted=a,
            kernel_drift=k,
            own=a - (k or 0.0),
            sweep_shift=shift,
            sweep_own=shift - (k or 0.0),
            residual=a - shift,
            sweep_size=sweep_size[s.sweep],
        )
    return out


# --- Each series' noise -----------------------------------------------------------------------


@cache
def run_histories(mirror: Mirror) -> dict[Series, list[str]]:
    """series -> the gh-pages runs that hold it, in upstream order."""
    out: dict[Series, list[str]] = defaultdict(list)
    for run, points in run_points(mirror).items():
        for series in points:
            out[series].append(run)
    return out


@cache
def run_step_parts(mirror: Mirror) -> dict[tuple[str, str], dict[Series, Parts]]:
    """(earlier run, later run) -> its decomposition, for every pair of runs that is a step
    (consecutive in some series' history)."""
    points = run_points(mirror)
    pairs = {pair for history in run_histories(mirror).values() for pair in pairwise(history)}
    return {(base, head): decompose(points[base], points[head]) for base, head in pairs}


@cache
def run_steps(mirror: Mirror) -> dict[Series, list[tuple[tuple[str, str], Parts]]]:
    """series -> (run pair, parts) of each of its run steps, oldest first."""
    parts = run_step_parts(mirror)
    out = {}
    for series, history in run_histories(mirror).items():
        pairs = pairwise(history)
        out[series] = [(pair, parts[pair][series]) for pair in pairs if series in parts[pair]]
    return out


def quantile(values: Iterable[float], q: float) -> float:
    """The q-quantile, interpolated linearly between order statistics."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (at - low) * (ordered[high] - ordered[low])


def pooled(spreads: Iterable[tuple[object, float]]) -> dict:
    """kind -> the median spread of that kind; a kind without any pools to 0."""
    by_kind = defaultdict(list)
    for kind, spread in spreads:
        by_kind[kind].append(spread)
    return defaultdict(float, {kind: statistics.median(values) for kind, values in by_kind.items()})


def shrink(steps: int, spread: float | None, pool: float) -> float:
    """A spread from ``steps`` steps shrunk toward its pool with the weight of PRIOR_STEPS steps."""
    if not steps:
        return pool
    return math.sqrt((steps * spread**2 + PRIOR_STEPS * pool**2) / (steps + PRIOR_STEPS))


@dataclass(frozen=True)
class Noise:
    history: int  # run steps of the series
    residual_spread: float | None
    sweep_spread: float | None
    sweep_history: int  # distinct run steps of its sweep
    residual_pool: float
    sweep_pool: float
    pooled: bool  # both pools of its kind exist
    residual_noise: float
    sweep_noise: float
    own_noise: float | None  # median |own change| / MAD_SCALE, with MIN_HISTORY steps or more

    @property
    def noise(self) -> float:
        return math.hypot(self.residual_noise, self.sweep_noise)

    @property
    def detectable_change(self) -> float:
        return math.exp(SIGNIFICANCE * max(self.residual_noise, self.sweep_noise)) - 1


@cache
def series_noise(mirror: Mirror) -> dict[Series, Noise]:
    """Every series of the mirror with its noise."""
    steps = run_steps(mirror)
    residual_spread, own_spread, alone = {}, {}, set()
    sweep_shifts: dict[tuple, dict[tuple[str, str], float]] = defaultdict(dict)
    for series, series_steps in steps.items():
        if series_steps:
            residual_spread[series] = statistics.median(abs(p.residual) for _, p in series_steps) / MAD_SCALE
            own_spread[series] = statistics.median(abs(p.own) for _, p in series_steps) / MAD_SCALE
        if series_steps and all(p.sweep_size == 1 for _, p in series_steps):
            alone.add(series)
        for pair, p in series_steps:
            sweep_shifts[series.sweep][pair] = p.sweep_own
    sweep_spread = {w: quantile(map(abs, d.values()), SWEEP_QUANTILE) / SWEEP_SCALE for w, d in sweep_shifts.items()}

    everything = {series_of(row) for row in mirror.results()}
    residual_pool = pooled(
        (series.pool, spread)
        for series, spread in residual_spread.items()
        if len(steps[series]) >= MIN_HISTORY and series not in alone
    )
    # A prior for a series: the median over series of their sweep's spread.
    sweep_pool = pooled(
        (series.pool, sweep_spread[series.sweep])
        for series in everything
        if series.sweep in sweep_spread and len(sweep_shifts[series.sweep]) >= MIN_HISTORY
    )

    out = {}
    for series in everything:
        history, sweep_history = len(steps.get(series, ())), len(sweep_shifts.get(series.sweep, ()))
        spread, shifts = residual_spread.get(series), sweep_spread.get(series.sweep)
        kind_pooled = series.pool in residual_pool and series.pool in sweep_pool  # before indexing adds the kind
        out[series] = Noise(
            history=history,
            residual_spread=spread,
            sweep_spread=shifts,
            sweep_history=sweep_history,
            residual_pool=residual_pool[series.pool],
            sweep_pool=sweep_pool[series.pool],
            pooled=kind_pooled,
            residual_noise=0.0 if series in alone else shrink(history, spread, residual_pool[series.pool]),
            sweep_noise=shrink(sweep_history, shifts, sweep_pool[series.pool]),
            own_noise=own_spread[series] if history >= MIN_HISTORY else None,
        )
    return out


# --- The verdict ------------------------------------------------------------------------------


def sign(x: float) -> int:
    return (x > 0) - (x < 0)


def noise_scale(base: Point, head: Point) -> float:
    """f: how much steadier a median of several runs is than one run against one."""
    return math.sqrt((1 / base.runs + 1 / head.runs) / 2)


def verdict(parts: Parts, noise: Noise, unit: str, f: float, threshold: float) -> str:
    """regression or improvement: beyond the threshold raw, drift-adjusted and own, in one
    direction, and K noise scales out (the sweep's shift or this workload's residual);
    unchanged: a change of max(T, E) ruled out, and either within the threshold on noise that
    stands on history (MIN_HISTORY steps, or one and the pools of its kind) or, with
    MIN_HISTORY steps, within DOUBT noise scales (the series' own noise where smaller); else
    inconclusive."""
    c, a, o, d, r = parts.change, parts.adjusted, parts.own, parts.sweep_own, parts.residual
    beyond = math.log1p(threshold)
    direction = sign(o)
    moved = all(abs(x) > beyond for x in (c, a, o)) and sign(c) == sign(a) == direction
    stands_out = (abs(d) >= SIGNIFICANCE * noise.sweep_noise * f and sign(d) == direction) or (
        abs(r) >= SIGNIFICANCE * noise.residual_noise * f and sign(r) == direction
    )
    if moved and stands_out:
        if unit.lower() not in LOWER_IS_BETTER:
            return "changed"
        return "regression" if direction > 0 else "improvement"
    ruled_out = abs(o) + CONFIDENCE_Z * noise.noise * f <= math.log1p(max(threshold, EQUIVALENCE))
    enough = noise.history >= MIN_HISTORY
    within = abs(o) <= beyond and (enough or (noise.history >= 1 and noise.pooled))
    doubt_noise = noise.noise if noise.own_noise is None else min(noise.noise, noise.own_noise)
    if ruled_out and (within or (enough and abs(o) < DOUBT * doubt_noise * f)):
        return "unchanged"
    return "inconclusive"


@dataclass(frozen=True)
class Judged:
    """One comparison row: both points, the evidence and the verdict."""

    base: Point
    head: Point
    change: float
    drift: float
    adjusted_change: float
    sweep_change: float
    noise: float  # scaled for the runs on each side
    z: float | None
    detectable_change: float
    environment_change: float | None
    history: int
    verdict: str


def compare(
    mirror: Mirror,
    base: Side,
    head: Side,
    threshold: float = THRESHOLD,
    ends: tuple[str | None, str | None] = (None, None),
) -> dict[Series, Judged]:
    """series -> its comparison row, for every series on both sides; ``ends`` are the runs that end
    each side (a build's newest run), between which environment shifts are read."""
    noise = series_noise(mirror)
    shifted = environment_between(mirror, *ends)
    return {
        s: judged(s, parts, noise[s], base[s], head[s], threshold, shifted.get(s))
        for s, parts in decompose(base, head).items()
    }


def judged(
    series: Series, parts: Parts, noise: Noise, base: Point, head: Point, threshold: float, environment: float | None
) -> Judged:
    f = noise_scale(base, head)
    scaled = noise.noise * f
    rule = verdict(parts, noise, series.unit, f, threshold)
    explained = (
        environment is not None
        and sign(environment) == sign(parts.own)
        and abs(parts.own - environment) <= max(math.log1p(threshold), SIGNIFICANCE * scaled)
    )
    return Judged(
        base=base,
        head=head,
        change=math.expm1(parts.change),
        drift=math.expm1(parts.change - parts.own),
        adjusted_change=math.expm1(parts.own),
        sweep_change=math.expm1(parts.sweep_own),
        noise=scaled,
        z=parts.own / scaled if scaled else None,
        detectable_change=noise.detectable_change,
        environment_change=None if environment is None else math.expm1(environment),
        history=noise.history,
        verdict="environment" if rule in ("regression", "improvement") and explained else rule,
    )


# --- Environment shifts ----------------------------------------------------------------------

# A file belongs to kernels by its stem when it lies directly in one of these folders.
KERNEL_FOLDERS = {
    "src/liger_kernel/ops",
    "src/liger_kernel/transformers",
    "src/liger_kernel/chunked_loss",
    "benchmark/scripts",
}
# The modules a kernel is built on, where their names differ from its own (the README's table).
BUILT_ON = {
    "distill_jsd_loss": {"jsd_loss", "fused_linear_distillation"},
    "distill_cosine_loss": {"cosine_similarity_loss", "fused_linear_distillation"},
    "dpo_loss": {"fused_linear_preference"},
    "kto_loss": {"fused_linear_unpaired_preference"},
    "fused_linear_cpo_loss": {"cpo_loss", "fused_linear_preference"},
    "fused_linear_simpo_loss": {"simpo_loss", "cpo_loss", "fused_linear_preference"},
    "fused_linear_grpo_loss_sequence": {"grpo_loss", "fused_linear_ppo"},
    "fused_linear_grpo_loss_token": {"grpo_loss", "fused_linear_ppo"},
    "fused_linear_cross_entropy": {"cross_entropy"},
    "fused_linear_jsd": {"jsd"},
    "tiled_geglu": {"tiled_mlp", "geglu"},
    "tiled_swiglu": {"tiled_mlp", "swiglu"},
    "sparse_multi_token_attention": {"multi_token_attention", "sparsemax"},
}


def kernel_stems(kernel: str) -> set[str]:
    """The file stems of a kernel: its own name (a dyt_beta=… kernel is dyt), utils, what it is built on."""
    return {re.sub(r"_beta=(True|False)$", "", kernel), "utils", *BUILT_ON.get(kernel, ())}


def file_stem(filename: str) -> str | None:
    folder, _, name = filename.rpartition("/")
    return name[: -len(".py")].removeprefix("benchmark_") if folder in KERNEL_FOLDERS and name.endswith(".py") else None


def compare_file(mirror: Mirror, base_run: str, head_run: str) -> dict | None:
    path = (
        mirror.root / "compare" / f"{base_run.split('-v')[0]}...{head_run.split('-v')[0]}.json" if mirror.root else None
    )
    return json.loads(path.read_text()) if path and path.is_file() else None


@cache
def environment_evidence(mirror: Mirror) -> dict[str, dict[Series, tuple[float, str | None]]]:
    """run -> Liger timing series -> (own change, 'slower' | 'faster' | None) of each step from
    the run uploaded before, where that step's compare is held, goes forward and touches no file
    of the series' kernel."""
    noise, step_parts, histories = series_noise(mirror), run_step_parts(mirror), run_histories(mirror)
    out = {}
    for base, head in pairwise(mirror.run_order):
        data = compare_file(mirror, base, head)
        if data is None or data["behind_by"] > 0:
            continue
        stems = {file_stem(f["filename"]) for f in data.get("files", [])} - {None}
        evidence = {}
        for series, parts in step_parts.get((base, head), {}).items():
            history = histories[series]
            consecutive = head in history and history.index(head) > 0 and history[history.index(head) - 1] == base
            if not (consecutive and series.provider.startswith("liger") and series.metric == "speed"):
                continue
            if kernel_stems(series.kernel) & stems:
                continue
            o = parts.own
            moved = (
                abs(o) > math.log1p(ENVIRONMENT_MOVE)
                and abs(o) >= SIGNIFICANCE * noise[series].noise
                and sign(parts.change) == sign(o)
            )
            evidence[series] = (o, ("slower" if o > 0 else "faster") if moved else None)
        out[head] = evidence
    return out


@cache
def environment_shifts(mirror: Mirror) -> dict[str, str]:
    """run -> direction of each environment shift: the series that moved one way are
    ENVIRONMENT_SHARE of those judged, from ENVIRONMENT_KERNELS kernels or more."""
    out = {}
    for run, evidence in environment_evidence(mirror).items():
        ways = Counter(way for _, way in evidence.values() if way)
        direction = "slower" if ways["slower"] >= ways["faster"] else "faster"
        kernels = {s.kernel for s, (_, way) in evidence.items() if way == direction}
        if (
            ways[direction]
            and ways[direction] >= ENVIRONMENT_SHARE * len(evidence)
            and len(kernels) >= ENVIRONMENT_KERNELS
        ):
            out[run] = direction
    return out


def environment_between(mirror: Mirror, base_run: str | None, head_run: str | None) -> dict[Series, float]:
    """series -> what it moved in the environment shifts between two runs (its own change in each
    shift it was judged at), signed from base to head; empty without both runs."""
    if base_run is None or head_run is None:
        return {}
    place = {run: i for i, run in enumerate(mirror.run_order)}
    low, high = sorted((place[base_run], place[head_run]))
    direction = 1 if place[head_run] >= place[base_run] else -1
    out: dict[Series, float] = defaultdict(float)
    for run in environment_shifts(mirror):
        if low < place[run] <= high:
            for series, (own, _) in environment_evidence(mirror)[run].items():
                out[series] += direction * own
    return dict(out)


# --- What the views and macros answer ---------------------------------------------------------


def run_named(mirror: Mirror, name: str) -> str:
    """A run name, or ``latest`` / ``previous``: the last two runs of commits.txt."""
    return {"latest": mirror.run_order[-1], "previous": mirror.run_order[-2]}.get(name, name)


@cache
def recent_points(mirror: Mirror) -> dict[str, Side]:
    """run -> series -> its recent level there ("The verdict", compare_runs): the median point of
    that run and the runs before it that hold the series, RECENT_RUNS of them at most."""
    rows = run_rows(mirror)
    out: dict[str, Side] = defaultdict(dict)
    for series, history in run_histories(mirror).items():
        for i, run in enumerate(history):
            recent = history[max(0, i - RECENT_RUNS + 1) : i + 1]
            out[run][series] = median_point([(rows[r][series], r) for r in recent])
    return out


def compare_recent(mirror: Mirror, base: str, head: str, threshold: float = THRESHOLD) -> dict[Series, Judged]:
    """The head run judged against the base run's recent level."""
    base, head = run_named(mirror, base), run_named(mirror, head)
    return compare(mirror, recent_points(mirror)[base], run_points(mirror)[head], threshold, (base, head))


def compare_runs(
    mirror: Mirror, base: str, head: str, threshold: float = THRESHOLD, recent_level: bool = True
) -> dict[Series, Judged]:
    """The head run judged against the base run; a flag stands unless, against the base run's
    recent level, the head is unchanged (then so is the verdict) or sits at or beyond that level
    the other way, raw or adjusted (then inconclusive). With ``recent_level`` off: the base run alone."""
    points, ends = run_points(mirror), (run_named(mirror, base), run_named(mirror, head))
    rows = compare(mirror, points[ends[0]], points[ends[1]], threshold, ends)
    if not recent_level:
        return rows
    recent = compare_recent(mirror, base, head, threshold)
    return {s: replace(row, verdict=_against_recent(row, recent[s])) for s, row in rows.items()}


def _against_recent(row: Judged, recent: Judged) -> str:
    if row.verdict in ("unchanged", "inconclusive"):
        return row.verdict
    if recent.verdict == "unchanged":
        return "unchanged"
    other_way = sign(row.head.p50 - recent.base.p50) != sign(row.change) or sign(recent.adjusted_change) != sign(
        row.adjusted_change
    )
    return "inconclusive" if other_way else row.verdict


def confirmation(
    mirror: Mirror, head: str, flags: dict[Series, tuple[float, float]], change_points: frozenset[Series] = frozenset()
) -> dict[Series, tuple]:
    """series -> (later runs, how many agree, 'suspected' | 'confirmed' | 'retracted') for each
    flag, given as series -> (the base side's p50, the adjusted change): the first CONFIRM_RUNS
    runs after ``head`` that hold the series agree when their p50 lies beyond the threshold from
    the base side in the direction of the change. A flag is confirmed when most agree, or when it
    is in ``change_points`` (a change point at the head goes its way)."""
    rows, order = run_rows(mirror), mirror.run_order
    after = order[order.index(run_named(mirror, head)) + 1 :]
    out = {}
    for series, (level, change) in flags.items():
        held = [rows[r][series].quantiles()[1] for r in after if series in rows[r]]
        later = [p for p in held[:CONFIRM_RUNS] if p > 0]  # the next runs holding it, as later_points
        agree = sum(
            abs(math.log(p / level)) > math.log1p(THRESHOLD) and sign(math.log(p / level)) == sign(change)
            for p in later
        )
        if (later and 2 * agree > len(later)) or series in change_points:
            state = "confirmed"
        else:
            state = "retracted" if later else "suspected"
        out[series] = (len(later), agree, state)
    return out


def release_named(name: str) -> str:
    """The version a release spelling names: ``0.7.0``, ``v0.7.0`` or its run ``7644a0f-v0.7.0``."""
    match = RELEASE_RUN.fullmatch(name)
    return match["version"] if match else name.removeprefix("v")


def compare_builds(mirror: Mirror, base: str, head: str, threshold: float = THRESHOLD) -> dict[Series, Judged]:
    points, newest = build_points(mirror), {b.label: b.runs[-1] if b.runs else None for b in builds(mirror)}
    return compare(mirror, points[base], points[head], threshold, (newest[base], newest[head]))


def compare_versions(
    mirror: Mirror, base: str, head: str, threshold: float = THRESHOLD
) -> dict[Series, tuple[float, float, str]]:
    """series -> (base p50, head p50, verdict) of two releases, as ``compare_versions`` answers."""
    rows = compare_builds(mirror, release_named(base), release_named(head), threshold)
    return {s: (row.base.p50, row.head.p50, row.verdict) for s, row in rows.items()}


@cache
def build_histories(mirror: Mirror) -> dict[Series, list[str]]:
    """series -> the builds that hold it, in build order."""
    out: dict[Series, list[str]] = defaultdict(list)
    points = build_points(mirror)
    for build in builds(mirror):
        for series in points[build.label]:
            out[series].append(build.label)
    return out


def regressions(mirror: Mirror, threshold: float = THRESHOLD) -> dict[tuple[Series, str, str], Judged]:
    """(series, base build, head build) -> the row of each step between consecutive builds of a
    series; each build pair is decomposed over every series both builds hold."""
    steps = defaultdict(list)
    for series, history in build_histories(mirror).items():
        for pair in pairwise(history):
            steps[pair].append(series)
    out = {}
    for (base, head), members in steps.items():
        rows = compare_builds(mirror, base, head, threshold)
        out |= {(s, base, head): rows[s] for s in members if s in rows}
    return out


# --- Speedups ---------------------------------------------------------------------------------


class Pairing(NamedTuple):
    liger: Series
    baseline: Series


def pairing_key(series: Series) -> tuple:
    """What a Liger series and a baseline series it pairs with share: all but provider and backend."""
    return (series.kernel, series.mode, *series[4:])


@dataclass(frozen=True)
class Shown:
    """One ``speedups`` row: a Liger result and a baseline result of one version that one
    upstream revision showed together."""

    source: str
    liger: Row
    baseline: Row
    revision: str  # the run, or the commit that first showed the Liger result

    @property
    def pairing(self) -> Pairing:
        return Pairing(series_of(self.liger), series_of(self.baseline))

    @property
    def speedup(self) -> float:
        """How many times less time (or memory) Liger takes than the baseline."""
        return self.baseline.quantiles()[1] / self.liger.quantiles()[1]


@cache
def speedups(mirror: Mirror) -> list[Shown]:
    out: dict[tuple[str, Row, Row], Shown] = {}
    for source, revisions in mirror.sources.items():
        first_shown: dict[Row, str] = {}
        for revision in revisions:
            together: dict[tuple, tuple[list[Row], list[Row]]] = defaultdict(lambda: ([], []))
            for row in revision.rows:
                first_shown.setdefault(row, revision.label)
                together[(pairing_key(series_of(row)), row.version)][not series_of(row).is_liger].append(row)
            for liger_rows, baseline_rows in together.values():
                for lg in liger_rows:
                    for bl in baseline_rows:
                        out.setdefault((source, lg, bl), Shown(source, lg, bl, first_shown[lg]))
    return list(out.values())


@dataclass(frozen=True)
class SpeedupNoise:
    runs: int  # gh-pages runs that hold both series
    spread: float | None
    pool: float

    @property
    def history(self) -> int:
        return max(self.runs - 1, 0)

    @property
    def noise(self) -> float:
        return shrink(self.history, self.spread, self.pool)


@cache
def speedup_noise(mirror: Mirror) -> dict[Pairing, SpeedupNoise]:
    """Every pairing with its noise: the spread of ln speedup between consecutive gh-pages runs
    that hold both series, as one run's level, shrunk toward its metric's pool."""
    points = run_points(mirror)
    levels: dict[Pairing, list[float]] = {}
    for pairing in {shown.pairing for shown in speedups(mirror)}:
        levels[pairing] = [
            math.log(held[pairing.baseline].p50 / held[pairing.liger].p50)
            for held in (points[run] for run in mirror.run_order)
            if pairing.liger in held and pairing.baseline in held
        ]
    spread = {
        pairing: statistics.median(abs(later - earlier) for earlier, later in pairwise(logs)) / MAD_SCALE / math.sqrt(2)
        for pairing, logs in levels.items()
        if len(logs) > 1
    }
    pool = pooled((p.liger.metric, value) for p, value in spread.items() if len(levels[p]) - 1 >= MIN_HISTORY)
    return {p: SpeedupNoise(len(logs), spread.get(p), pool[p.liger.metric]) for p, logs in levels.items()}


def winner(speedup: float, noise: float, runs: int, threshold: float = THRESHOLD) -> str:
    """``tie`` unless the speedup is beyond the threshold and 3 noise scales (for its runs) from even."""
    level = math.log(speedup)
    if abs(level) > math.log1p(threshold) and abs(level) >= SPEEDUP_Z * noise / math.sqrt(runs):
        return "liger" if level > 0 else "baseline"
    return "tie"


@dataclass(frozen=True)
class BuildSpeedup:
    speedup: float  # the median over the rows that stand for the build
    runs: int
    sources: tuple[str, ...]
    winner: str


@cache
def build_of_run(mirror: Mirror) -> dict[str, str]:
    return {run: build.label for build in builds(mirror) for run in build.runs}


def speedup_history(mirror: Mirror, threshold: float = THRESHOLD) -> dict[tuple[Pairing, str], BuildSpeedup]:
    """(pairing, build) -> the pairing's speedup in the build: over the build's runs that show
    it, else (a release) over the main-branch rows of that version."""
    run_build = build_of_run(mirror)
    placed: dict[tuple[Pairing, str], tuple[list[Shown], list[Shown]]] = defaultdict(lambda: ([], []))
    for shown in speedups(mirror):
        from_run = shown.source in run_build
        build = run_build[shown.source] if from_run else shown.liger.version
        placed[(shown.pairing, build)][from_run].append(shown)
    noise = speedup_noise(mirror)
    out = {}
    for (pairing, build), (from_main, from_runs) in placed.items():
        rows = from_runs or from_main
        value = statistics.median(shown.speedup for shown in rows)
        runs = len(rows)
        sources = tuple(sorted({shown.revision for shown in rows}))
        out[(pairing, build)] = BuildSpeedup(value, runs, sources, winner(value, noise[pairing].noise, runs, threshold))
    return out
