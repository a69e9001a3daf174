"""Issue 12, point 5 (labels): the backend comes from the provider, baselines carry none, and the
rows of the cuTile and CuTe DSL files never share a series (docs/SCHEMA.md, schema version 2).

Expected digests are recomputed here from the identities docs/SCHEMA.md documents, written out
by hand (sorted keys, no spaces, UTF-8), with the rows read straight from the mirror's files."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from pathlib import Path

import pytest

from liger_warehouse.model.digests import digest, flat_digest
from liger_warehouse.normalize.rows import backend, harness, stem_of_harness
from tests import expected, expected_verdicts
from tests.conftest import MIRROR
from tests.plain_duckdb import open_views

CUTILE, CUTEDSL, MAIN = "all_benchmark_data_cutile", "all_benchmark_data_cutedsl", "all_benchmark_data"
QUANTILES = [0.5, 0.2, 0.8]


def _sha(identity: dict) -> str:
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _query(db: Path, sql: str, params: object = None) -> list[tuple]:
    with open_views(db) as con:
        return con.execute(sql, params).fetchall()


# -- the rules, on provider spellings -------------------------------------------------------


@pytest.mark.parametrize(
    ("stem", "provider", "want"),
    [
        (CUTILE, "liger_triton", "triton"),  # the provider names its backend: it wins
        (CUTEDSL, "liger_triton", "triton"),
        (CUTILE, "liger_cutile", "cutile"),
        (CUTEDSL, "liger_cutedsl", "cutedsl"),
        (MAIN, "liger_triton_fp32", "triton"),  # a backend word anywhere in the name
        (None, "liger-cutile-v2", "cutile"),
        (CUTILE, "liger", "cutile"),  # other Liger providers: the file's backend
        (CUTILE, "liger_tiled", "cutile"),
        (MAIN, "liger_fused_add_rms_norm", "triton"),
        (None, "liger-fp32-accum", "triton"),  # gh-pages runs are the main suite
        (CUTILE, "torch", None),  # baselines: no Liger backend
        (CUTEDSL, "torch", None),
        (CUTILE, "huggingface", None),
        (CUTILE, "deepspeed_tiled", None),
        (MAIN, "megatron-unfused", None),
        (None, "torch_compile", None),
    ],
)
def test_backend_comes_from_the_provider(stem, provider, want):
    assert backend(stem, provider) == want


def test_each_upstream_file_is_its_own_suite():
    assert [harness(s) for s in (None, MAIN, CUTEDSL, CUTILE)] == [
        "liger-kernel-bench",
        "liger-kernel-bench",
        "liger-kernel-bench:cutedsl",
        "liger-kernel-bench:cutile",
    ]
    assert harness("all_benchmark_data_rocm") == "liger-kernel-bench:rocm"  # a future file too
    for stem in (MAIN, CUTEDSL, CUTILE, "all_benchmark_data_rocm"):
        assert stem_of_harness(harness(stem)) == stem
    assert stem_of_harness("some-other-bench") is None


def test_a_null_backend_digests_as_json_null():
    identity = {"protocol_digest": "a", "workload_digest": "b", "environment_digest": "c", "provider": "torch"}
    assert flat_digest({**identity, "backend": None}) == digest({**identity, "backend": None})
    assert flat_digest({**identity, "backend": None}) == _sha({**identity, "backend": None})


# -- digests of one row of each kind, recomputed by hand --------------------------------------


def _head_lines(stem: str) -> tuple[str, list[str]]:
    """(path, record lines) of the newest main-branch revision of one file in the mirror."""
    sha = json.loads((MIRROR / "commits" / f"{stem}.json").read_text())[0]["sha"]
    path = f"benchmark/data/{stem}.csv"
    text = gzip.decompress((MIRROR / "raw" / sha / f"{path}.gz").read_bytes()).decode()
    return path, text.splitlines()[1:]


def _run_lines() -> tuple[str, list[str]]:
    run = (MIRROR / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()[-1]
    text = gzip.decompress((MIRROR / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz").read_bytes()).decode()
    return run, text.splitlines()[1:]


def _plain_config(fields: list[str]) -> dict | None:
    """The config when all its values are integers or strings (their JSON is RFC 8785's as
    json.dumps writes it); None otherwise."""
    config = json.loads(fields[11])
    return config if all(isinstance(v, int | str) for v in config.values()) else None


# (source, stem, provider, harness, backend): one row of each kind.
KINDS = [
    ("main", MAIN, "huggingface", "liger-kernel-bench", None),
    ("main", CUTILE, "liger_triton", "liger-kernel-bench:cutile", "triton"),
    ("main", CUTILE, "torch", "liger-kernel-bench:cutile", None),
    ("main", CUTEDSL, "liger_triton", "liger-kernel-bench:cutedsl", "triton"),
    ("gh-pages", None, "liger", "liger-kernel-bench", "triton"),
]


@pytest.mark.parametrize(("source", "stem", "provider", "suite", "backend_name"), KINDS)
def test_digests_recomputed_by_hand(mirror_warehouse, source, stem, provider, suite, backend_name):
    key, lines = _run_lines() if source == "gh-pages" else _head_lines(stem)
    line, fields = next(
        (line, f) for line in lines if (f := next(csv.reader([line])))[1] == provider and _plain_config(f) is not None
    )
    kernel, _, mode, metric, unit, x_name, x_label, x_value = fields[:8]
    result = _sha({"row": line, "source": source, "source_key": key})
    protocol = _sha(
        {
            "harness": suite,
            "timed_pass": mode,
            "metric": metric,
            "unit": unit,
            "statistic": "median",
            "quantiles": QUANTILES,
        }
    )
    workload = _sha(
        {"kernel": kernel, "x_name": x_name, "x_label": x_label, "x_value": x_value, "config": _plain_config(fields)}
    )
    environment = _sha({"gpu_name": fields[12]})
    implementation = _sha({"provider": provider, "liger_version": fields[14], "backend": backend_name})
    series = _sha(
        {
            "protocol_digest": protocol,
            "workload_digest": workload,
            "environment_digest": environment,
            "provider": provider,
            "backend": backend_name,
        }
    )
    got = _query(
        mirror_warehouse.database,
        "select protocol_digest, workload_digest, environment_digest, implementation_digest, series_digest "
        "from fact_result where result_digest = ?",
        [result],
    )
    assert got == [(protocol, workload, environment, implementation, series)]
    # The dimension rows say what was hashed; a baseline's backend is NULL.
    assert _query(
        mirror_warehouse.database,
        "select harness, backend from dim_protocol, dim_implementation where protocol_digest = ? "
        "and implementation_digest = ?",
        [protocol, implementation],
    ) == [(suite, backend_name)]


def test_baselines_carry_no_backend(mirror_warehouse):
    rows = _query(
        mirror_warehouse.database,
        "select starts_with(provider, 'liger') as liger, count(*) filter (where backend is null), count(*) "
        "from dim_implementation group by 1 order by 1",
    )
    (baseline_null, baselines), (liger_null, ligers) = ((n, t) for _, n, t in rows)
    assert baseline_null == baselines > 0 and liger_null == 0 and ligers > 0


# -- the cuTile and CuTe DSL files never hide each other --------------------------------------


def test_the_two_files_liger_triton_rows_are_distinct_series(mirror_warehouse):
    """20 B200 cross_entropy liger_triton series used to merge rows of both files; each is two now."""
    mirror = expected.read_mirror(MIRROR)
    by_file: dict[str, set[tuple]] = {CUTILE: set(), CUTEDSL: set()}
    for rows in (rev.rows for revs in mirror.sources.values() for rev in revs):
        for r in rows:
            if r.stem in by_file and r.get("kernel_provider") == "liger_triton":
                by_file[r.stem].add(r.series[:-1])  # the series without its suite
    shared = by_file[CUTILE] & by_file[CUTEDSL]
    assert len(shared) == 20
    assert {s[0] for s in shared} == {"cross_entropy"} and {s[6] for s in shared} == {"NVIDIA B200"}
    db = mirror_warehouse.database
    per_file = dict(
        _query(
            db,
            "select source_key, list(distinct series_digest) from results where provider = 'liger_triton' "
            "and kernel = 'cross_entropy' and gpu = 'NVIDIA B200' group by 1",
        )
    )
    cutile, cutedsl = (set(per_file[f"benchmark/data/{s}.csv"]) for s in (CUTILE, CUTEDSL))
    assert not cutile & cutedsl
    # Every build of every series stands on its own: the version points of these rows are
    # those of the independent reading, one per series and build, from both files.
    want = {
        (series, build)
        for build, points in expected_verdicts.build_points(mirror).items()
        for series in points
        if series[2] == "liger_triton" and series[0] == "cross_entropy" and series[6] == "NVIDIA B200"
    }
    got = _query(
        db,
        "select count(*), count(distinct series_digest) from version_points where provider = 'liger_triton' "
        "and kernel = 'cross_entropy' and gpu = 'NVIDIA B200'",
    )
    assert got == [(len(want), len(cutile) + len(cutedsl))]
    assert len({s for s, _ in want}) == len(cutile) + len(cutedsl) >= 40
