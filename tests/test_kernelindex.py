"""kernelindex.dev/v1alpha1 export: the reference record, round trips, memory, the schema."""

from __future__ import annotations

import copy
import csv
import gzip
import json
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

import pytest

from liger_warehouse.export.kernelindex import (
    NAME_LIMIT,
    kernelindex_record,
    result_from_kernelindex,
    validate_record,
)
from liger_warehouse.model.workload import parse_config
from tests.conftest import MIRROR, require_reference

DIGESTS = {
    "protocol_digest": "sha256:" + "a" * 64,
    "workload_digest": "sha256:" + "b" * 64,
    "environment_digest": "sha256:" + "c" * 64,
    "implementation_digest": "sha256:" + "d" * 64,
}
DIGEST_FIELDS = ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest")
REFERENCE_KEY = {
    "kernel_name": "embedding",
    "kernel_provider": "liger",
    "kernel_operation_mode": "full",
    "metric_name": "speed",
    "x_name": "V",
    "x_value": "131072",
    "gpu_name": "NVIDIA A100-SXM4-80GB",
    "timestamp": "2024-09-03 15:32:05",
    "liger_version": "0.2.1",
}
REFERENCE_CONFIG = {"B": 32, "T": 512, "D": 768, "dtype": "torch.float32"}


@cache
def _mirror_rows() -> tuple[dict[str, str], ...]:
    """Distinct upstream rows of every CSV in the fixture cut."""
    seen: dict[tuple, dict[str, str]] = {}
    for path in sorted(MIRROR.glob("**/*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.DictReader(handle):
                if row["kernel_name"]:
                    seen.setdefault(tuple(row.values()), row)
    return tuple(seen.values())


def _result(row: dict[str, str]) -> dict[str, Any]:
    """A warehouse result as the export expects it, from one upstream CSV row."""
    return {
        "kernel": row["kernel_name"],
        "operation_mode": row["kernel_operation_mode"],
        "provider": row["kernel_provider"],
        "metric": row["metric_name"],
        "unit": row["metric_unit"],
        "gpu_name": row["gpu_name"],
        "x_name": row["x_name"],
        "x_label": row["x_label"],
        "x_value": row["x_value"],
        "config": parse_config(row["extra_benchmark_config_str"]),
        "liger_version": row["liger_version"],
        "p20": float(row["y_value_20"]),
        "p50": float(row["y_value_50"]),
        "p80": float(row["y_value_80"]),
        "observed_at": datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S"),
        **DIGESTS,
    }


def _reference_row() -> dict[str, str]:
    matches = [
        row
        for row in _mirror_rows()
        if all(row[key] == value for key, value in REFERENCE_KEY.items())
        and parse_config(row["extra_benchmark_config_str"]) == REFERENCE_CONFIG
    ]
    assert len(matches) == 1, "exactly one distinct upstream row is the reference"
    return matches[0]


def _without_digests(record: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(record)
    for field in DIGEST_FIELDS:
        stripped["run"]["spec"].pop(field)
    return stripped


def _sample_result(**changes: Any) -> dict[str, Any]:
    result = {
        "kernel": "embedding",
        "operation_mode": "full",
        "provider": "liger",
        "metric": "speed",
        "unit": "ms",
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "x_name": "V",
        "x_label": "vocab size",
        "x_value": "131072",
        "config": dict(REFERENCE_CONFIG),
        "liger_version": "0.2.1",
        "p20": 1.25,
        "p50": 1.5,
        "p80": 1.75,
        "observed_at": datetime(2024, 9, 3, 15, 32, 5),
        **DIGESTS,
    }
    result.update(changes)
    return result


def test_reference_record_is_reproduced_from_the_mirror_row() -> None:
    reference = require_reference()
    row = _reference_row()
    assert row["metric_unit"] == "ms"
    record = kernelindex_record(_result(row))
    assert _without_digests(record) == _without_digests(reference)
    # Key order too, so exported JSON reads like the reference.
    assert json.dumps(_without_digests(record)) == json.dumps(_without_digests(reference))
    for field in DIGEST_FIELDS:
        assert record["run"]["spec"][field].startswith("sha256:")


def test_reference_validates() -> None:
    assert validate_record(require_reference()) == []


def test_reference_reads_back() -> None:
    result = result_from_kernelindex(require_reference())
    assert result["kernel"] == "embedding" and result["operation_mode"] == "full"
    assert result["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert result["p50"] == 1.4482879638671875
    assert result["observed_at"] == datetime(2024, 9, 3, 15, 32, 5)
    assert result["config"]["vocab"] == 131072
    assert kernelindex_record(result) == require_reference()


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"metric": "memory", "unit": "MB", "p20": 100.5, "p50": 101.0, "p80": 102.25},
        {"gpu_name": "NVIDIA Imaginary X1"},
        {"operation_mode": "no-grad-forward", "liger_version": "0.7.0rc1"},
        {"observed_at": datetime(2025, 1, 2, 3, 4, 5, 678_901)},
        {"kernel": "dyt_beta=True", "x_name": "hidden_size", "config": {"beta": True}},
        {"kernel": "new_kernel", "operation_mode": "inference", "liger_version": None},
    ],
)
def test_round_trip(changes: dict[str, Any]) -> None:
    record = kernelindex_record(_sample_result(**changes))
    assert validate_record(record) == []
    assert kernelindex_record(result_from_kernelindex(record)) == record


def test_mirror_rows_export_validate_and_round_trip() -> None:
    # One row per kernel, mode, provider, metric and GPU keeps this fast but broad.
    picked: dict[tuple, dict[str, str]] = {}
    for row in _mirror_rows():
        key = tuple(row[k] for k in ("kernel_name", "kernel_operation_mode", "kernel_provider"))
        picked.setdefault((*key, row["metric_name"], row["gpu_name"]), row)
    assert len(picked) > 100
    for row in picked.values():
        record = kernelindex_record(_result(row))
        assert validate_record(record) == [], row
        assert kernelindex_record(result_from_kernelindex(record)) == record


def test_memory_rule() -> None:
    record = kernelindex_record(_sample_result(metric="memory", unit="MB", p20=100.5, p50=101.0, p80=102.25))
    spec = record["run"]["spec"]
    assert "timing" not in spec
    assert spec["memory"] == {"peakBytes": {"median": 101 * 2**20}, "primaryStatistic": "median"}
    assert spec["measurements"] == [
        {"unit": "bytes", "value": int(100.5 * 2**20), "metric": "peak_memory", "statistic": "p20"},
        {"unit": "bytes", "value": int(102.25 * 2**20), "metric": "peak_memory", "statistic": "p80"},
    ]
    assert spec["sourceNative"]["metrics"] == {"mb_20": 100.5, "mb_50": 101.0, "mb_80": 102.25}
    assert spec["sourceNative"]["benchmark"] == "embedding/full/peak-memory"
    assert spec["sourceNative"]["externalId"].startswith("embedding/full/peak-memory/liger/")
    assert record["run"]["metadata"]["name"].startswith("liger-embedding-full-peak-memory-liger-")
    assert record["run"]["metadata"]["title"] == "Embedding lookup · liger · full · peak memory"
    protocol = record["protocol"]
    assert protocol["metadata"]["name"] == "liger-bench-peak-memory-full"
    assert protocol["spec"]["measurement"] == {"probe": "allocator_peak", "primaryStatistic": "median"}
    assert "MiB" in protocol["spec"]["comparability"]["notes"]


def test_speed_and_memory_of_one_row_have_distinct_ids() -> None:
    speed = kernelindex_record(_sample_result())
    memory = kernelindex_record(_sample_result(metric="memory", unit="MB"))
    assert speed["run"]["metadata"]["name"] != memory["run"]["metadata"]["name"]
    assert speed["protocol"]["metadata"]["name"] != memory["protocol"]["metadata"]["name"]


@pytest.mark.parametrize(
    ("mode", "phrase"),
    [
        ("full", "the forward pass plus the backward pass"),
        ("forward", "the forward pass alone"),
        ("backward", "the backward pass alone"),
        ("no-grad-forward", "torch.no_grad()"),
        ("inference", 'the "inference" pass'),
    ],
)
def test_protocol_per_timed_pass(mode: str, phrase: str) -> None:
    protocol = kernelindex_record(_sample_result(operation_mode=mode))["protocol"]
    assert protocol["metadata"] == {
        "name": f"liger-bench-do-bench-{mode}",
        "title": f"Liger benchmark harness · {mode} pass",
    }
    assert phrase in protocol["spec"]["comparability"]["notes"]


def test_unknown_gpu_keeps_its_raw_name() -> None:
    record = kernelindex_record(_sample_result(gpu_name="NVIDIA Imaginary X1"))
    environment = record["environment"]
    assert environment["spec"]["hardware"] == {
        "vendor": None,
        "product": "NVIDIA Imaginary X1",
        "formFactor": None,
        "architecture": None,
    }
    assert environment["metadata"] == {
        "name": "liger-bench-nvidia-imaginary-x1",
        "title": "Liger benchmark host · NVIDIA Imaginary X1",
    }
    assert result_from_kernelindex(record)["gpu_name"] == "NVIDIA Imaginary X1"


def test_observed_at_is_utc_with_milliseconds() -> None:
    eastern = timezone(timedelta(hours=-4))
    aware = datetime(2024, 9, 3, 11, 32, 5, 123_999, tzinfo=eastern)
    spec = kernelindex_record(_sample_result(observed_at=aware))["run"]["spec"]
    assert spec["observedAt"] == "2024-09-03T15:32:05.123Z"
    assert spec["sourceNative"]["externalId"].endswith("/2024-09-03-15-32-05-123")
    naive_utc = datetime(2024, 9, 3, 15, 32, 5, 123_000)
    assert result_from_kernelindex(kernelindex_record(_sample_result(observed_at=aware)))["observed_at"] == naive_utc
    assert datetime(2024, 9, 3, 15, 32, 5, tzinfo=UTC).tzinfo is UTC


def test_latency_rounds_to_the_nearest_nanosecond() -> None:
    spec = kernelindex_record(_sample_result(p20=0.0000004, p50=0.0000006, p80=2.0))["run"]["spec"]
    assert spec["timing"]["latencyNs"]["median"] == 1
    assert [m["value"] for m in spec["measurements"]] == [0, 2_000_000]


def test_names_are_cut_to_the_limit_without_a_trailing_hyphen() -> None:
    config = {f"param_{i}": i for i in range(30)}
    record = kernelindex_record(_sample_result(config=config))
    name = record["run"]["metadata"]["name"]
    assert len(name) <= NAME_LIMIT and not name.endswith("-")
    assert validate_record(record) == []


def test_no_version_means_no_label() -> None:
    record = kernelindex_record(_sample_result(liger_version=None))
    assert record["run"]["metadata"]["labels"] == {}


@pytest.mark.parametrize(
    "changes",
    [{"metric": "speed", "unit": "MB"}, {"metric": "throughput", "unit": "ms"}],
)
def test_unsupported_metric_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="unsupported metric/unit"):
        kernelindex_record(_sample_result(**changes))


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="p50 is not a finite number"):
        kernelindex_record(_sample_result(p50=float("nan")))


def _broken(path: tuple[str, ...], value: Any = None, delete: bool = False) -> dict[str, Any]:
    record = kernelindex_record(_sample_result())
    target = record
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return record


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (_broken(("run", "apiVersion"), "kernelindex.dev/v1"), "$.run.apiVersion"),
        (_broken(("protocol", "kind"), "Protocol"), "$.protocol.kind"),
        (_broken(("run", "spec", "protocolDigest"), "sha256:XYZ"), "$.run.spec.protocolDigest"),
        (_broken(("run", "spec", "workloadDigest"), delete=True), "'workloadDigest' is a required"),
        (_broken(("run", "spec", "memory"), {}), "$.run.spec.memory"),
        (_broken(("run", "spec", "observedAt"), "2024-09-03 15:32:05"), "$.run.spec.observedAt"),
        (_broken(("run", "metadata", "name"), "Liger-UPPER"), "$.run.metadata.name"),
        (_broken(("run", "metadata", "name"), "x" * 101), "$.run.metadata.name"),
        (_broken(("run", "spec", "sourceNative", "metrics"), {"mb_50": 1.0}), "metrics"),
        (_broken(("environment", "spec", "hardware", "vendor"), delete=True), "'vendor'"),
        (_broken(("run", "spec", "surprise"), 1), "Additional properties"),
        (_broken(("run", "spec", "timing", "latencyNs", "median"), 1.5), "median"),
    ],
)
def test_broken_records_yield_errors(record: dict[str, Any], expected: str) -> None:
    errors = validate_record(record)
    assert errors, "a broken record must not validate"
    assert any(expected in error for error in errors), errors


def test_validate_non_object() -> None:
    assert validate_record([]) != []


def test_reading_back_an_invalid_record_is_refused() -> None:
    record = _broken(("run", "spec", "sourceNative"), delete=True)
    with pytest.raises(ValueError, match="invalid kernelindex record"):
        result_from_kernelindex(record)
