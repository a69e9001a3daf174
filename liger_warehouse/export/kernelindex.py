"""Export one warehouse result as a ``kernelindex.dev/v1alpha1`` record, and read one back.

A record is ``{"run": BenchmarkRun, "protocol": BenchmarkProtocol, "environment":
ExecutionEnvironment}``. Every field follows from the result by the rules in
``docs/KERNELINDEX.md``; ``../shared/spec/kernelindex-v1alpha1-embedding-full.json`` (beside
the checkout) is the reference a test compares against field by field. Pure logic: no I/O besides the schema file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from liger_warehouse.export.record_schema import validate_record
from liger_warehouse.model.catalog.gpus import gpu_slug, lookup_gpu, lookup_gpu_by_slug
from liger_warehouse.model.catalog.kernels import kernel_title
from liger_warehouse.model.workload import decode_workload_slug, workload_slug

API_VERSION = "kernelindex.dev/v1alpha1"
SOURCE = "liger-kernel-bench"
FAMILY = "liger_kernel_bench"
NAME_LIMIT = 100
HARNESS = {
    "name": "Liger-Kernel benchmark scripts",
    "repository": "https://github.com/linkedin/Liger-Kernel",
}
DIGEST_KEYS = ("protocol_digest", "workload_digest", "environment_digest", "implementation_digest")
OBSERVED_AT = "%Y-%m-%dT%H:%M:%S"
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

PASS_TEXT = {
    "full": "the forward pass plus the backward pass",
    "forward": "the forward pass alone, with autograd recording (so it includes saving what the backward pass needs)",
    "backward": "the backward pass alone, replayed on the retained graph of one forward pass",
    "no-grad-forward": (
        "the forward pass under torch.no_grad(), as inference runs it (nothing is recorded for a backward pass)"
    ),
}
QUANTILE_TEXT = "quantiles 0.5/0.2/0.8 (median with p20/p80 spread)"
CONTEXT_TEXT = "The upstream CSV records no CUDA, driver, or torch version; the Liger release rides each run's labels."


@dataclass(frozen=True)
class MetricRule:
    """How one upstream metric maps onto a run: its block, quantity, units and names."""

    metric: str
    unit: str
    block: str
    quantity: str
    native_prefix: str
    measurement_metric: str
    measurement_unit: str
    scale: float
    benchmark_suffix: str
    protocol_prefix: str
    title_suffix: str


SPEED = MetricRule(
    metric="speed",
    unit="ms",
    block="timing",
    quantity="latencyNs",
    native_prefix="ms",
    measurement_metric="latency",
    measurement_unit="ns",
    scale=1e6,
    benchmark_suffix="",
    protocol_prefix="liger-bench-do-bench",
    title_suffix="",
)
# Upstream "MB" is MiB: utils._test_memory divides max_memory_allocated() by 2**20, and every
# memory value in the mirror times 2**20 is a whole number of bytes.
MEMORY = MetricRule(
    metric="memory",
    unit="MB",
    block="memory",
    quantity="peakBytes",
    native_prefix="mb",
    measurement_metric="peak_memory",
    measurement_unit="bytes",
    scale=float(2**20),
    benchmark_suffix="/peak-memory",
    protocol_prefix="liger-bench-peak-memory",
    title_suffix=" · peak memory",
)
RULES = {rule.metric: rule for rule in (SPEED, MEMORY)}


def slugify(text: str) -> str:
    """Lower case, every run of characters outside ``[a-z0-9]`` one ``-``, no edge hyphens."""
    return _NON_ALNUM.sub("-", text.lower()).strip("-")


def object_name(text: str) -> str:
    """A metadata name: ``slugify``, cut to 100 characters, no trailing hyphen after the cut."""
    return slugify(text)[:NAME_LIMIT].rstrip("-")


def _rule(result: Mapping[str, Any]) -> MetricRule:
    rule = RULES.get(result["metric"])
    if rule is None or result["unit"] != rule.unit:
        raise ValueError(f"unsupported metric/unit: {result['metric']!r}/{result['unit']!r}")
    return rule


def _utc(moment: datetime) -> datetime:
    # Naive means UTC (upstream writes wall-clock time with no zone; the warehouse keeps it).
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def observed_at_text(moment: datetime) -> str:
    """``2024-09-03T15:32:05.000Z``: UTC, milliseconds (sub-millisecond digits dropped)."""
    moment = _utc(moment)
    return f"{moment.strftime(OBSERVED_AT)}.{moment.microsecond // 1000:03d}Z"


def timestamp_slug(moment: datetime) -> str:
    """``2024-09-03-15-32-05``; ``-mmm`` milliseconds are appended only when not zero."""
    moment = _utc(moment)
    millis = moment.microsecond // 1000
    return moment.strftime("%Y-%m-%d-%H-%M-%S") + (f"-{millis:03d}" if millis else "")


def _scaled(value: float, rule: MetricRule, name: str) -> int:
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} is not a finite number: {value!r}")
    return round(value * rule.scale)


def benchmark_name(result: Mapping[str, Any]) -> str:
    """``<kernel>/<mode>`` for speed, ``<kernel>/<mode>/peak-memory`` for memory."""
    return f"{result['kernel']}/{result['operation_mode']}{_rule(result).benchmark_suffix}"


def external_id(result: Mapping[str, Any]) -> str:
    """``<benchmark>/<provider>/<gpu slug>/<workload slug>/<timestamp slug>``."""
    # The warehouse passes dim_workload.slug, made by workload_slug at ingest: recomputing it
    # for every record was three quarters of an export's time.
    workload = result.get("workload_slug") or workload_slug(result["x_name"], result["x_value"], result["config"])
    parts = (
        benchmark_name(result),
        result["provider"],
        gpu_slug(result["gpu_name"]),
        workload,
        timestamp_slug(result["observed_at"]),
    )
    return "/".join(parts)


def _measurements(result: Mapping[str, Any], rule: MetricRule) -> list[dict[str, Any]]:
    return [
        {
            "unit": rule.measurement_unit,
            "value": _scaled(result[key], rule, key),
            "metric": rule.measurement_metric,
            "statistic": key,
        }
        for key in ("p20", "p80")
    ]


def _source_native(result: Mapping[str, Any], rule: MetricRule) -> dict[str, Any]:
    prefix = rule.native_prefix
    return {
        "source": SOURCE,
        "metrics": {f"{prefix}_{q}": float(result[f"p{q}"]) for q in ("20", "50", "80")},
        "benchmark": benchmark_name(result),
        "externalId": external_id(result),
    }


def _run_spec(result: Mapping[str, Any], rule: MetricRule) -> dict[str, Any]:
    median = _scaled(result["p50"], rule, "p50")
    spec: dict[str, Any] = {
        "status": "passed",
        rule.block: {rule.quantity: {"median": median}, "primaryStatistic": "median"},
        "observedAt": observed_at_text(result["observed_at"]),
        "measurements": _measurements(result, rule),
        "sourceNative": _source_native(result, rule),
    }
    for key in DIGEST_KEYS:
        spec[_camel(key)] = result[key]
    return spec


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _run(result: Mapping[str, Any], rule: MetricRule) -> dict[str, Any]:
    kernel = kernel_title(result["kernel"]) or result["kernel"]
    title = f"{kernel} · {result['provider']} · {result['operation_mode']}{rule.title_suffix}"
    labels = {"liger_version": result["liger_version"]} if result.get("liger_version") else {}
    return {
        "kind": "BenchmarkRun",
        "spec": _run_spec(result, rule),
        "metadata": {
            "name": object_name("liger-" + external_id(result)),
            "title": title,
            "labels": labels,
        },
        "apiVersion": API_VERSION,
    }


def comparability_notes(mode: str, rule: MetricRule) -> str:
    """The protocol's comparability notes for one pass and metric."""
    what = PASS_TEXT.get(mode, f'the "{mode}" pass as the upstream benchmark script defines it')
    if rule is SPEED:
        return (
            f"Timed: {what}, via triton.testing.do_bench with {QUANTILE_TEXT}. {CONTEXT_TEXT} "
            "Comparable only within one kernel, workload, timed pass, and GPU."
        )
    return (
        f"Measured: the peak memory PyTorch's caching allocator had allocated during {what} "
        "(max_memory_allocated after reset_peak_memory_stats), over repeated runs (upstream "
        f"default 10) reduced with {QUANTILE_TEXT}. Upstream reports MB meaning MiB (2^20 "
        "bytes); the record carries whole bytes. Memory outside the allocator (CUDA context, "
        f"library workspaces) is not counted. {CONTEXT_TEXT} "
        "Comparable only within one kernel, workload, measured pass, and GPU."
    )


def _measurement(rule: MetricRule) -> dict[str, str]:
    if rule is SPEED:
        return {"timer": "cuda_events", "primaryStatistic": "median"}
    return {"probe": "allocator_peak", "primaryStatistic": "median"}


def _protocol(result: Mapping[str, Any], rule: MetricRule) -> dict[str, Any]:
    mode = result["operation_mode"]
    return {
        "kind": "BenchmarkProtocol",
        "spec": {
            "harness": dict(HARNESS),
            "measurement": _measurement(rule),
            "comparability": {"notes": comparability_notes(mode, rule), "family": FAMILY},
        },
        "metadata": {
            "name": object_name(f"{rule.protocol_prefix}-{mode}"),
            "title": f"Liger benchmark harness · {mode} pass{rule.title_suffix}",
        },
        "apiVersion": API_VERSION,
    }


def hardware(gpu_name: str) -> dict[str, str | None]:
    """Catalog hardware; an uncatalogued GPU keeps its raw name as product, the rest null."""
    gpu = lookup_gpu(gpu_name)
    if gpu is None:
        return {"vendor": None, "product": gpu_name, "formFactor": None, "architecture": None}
    return {
        "vendor": gpu.vendor,
        "product": gpu.product,
        "formFactor": gpu.form_factor,
        "architecture": gpu.architecture,
    }


def _environment(result: Mapping[str, Any]) -> dict[str, Any]:
    gpu_name = result["gpu_name"]
    gpu = lookup_gpu(gpu_name)
    return {
        "kind": "ExecutionEnvironment",
        "spec": {"hardware": hardware(gpu_name), "software": {}},
        "metadata": {
            "name": object_name(f"liger-bench-{gpu_slug(gpu_name)}"),
            "title": f"Liger benchmark host · {gpu.short_name if gpu else gpu_name}",
        },
        "apiVersion": API_VERSION,
    }


def kernelindex_record(result: Mapping[str, Any]) -> dict[str, Any]:
    """The ``kernelindex.dev/v1alpha1`` record of one warehouse result (see module docstring)."""
    rule = _rule(result)
    return {
        "run": _run(result, rule),
        "protocol": _protocol(result, rule),
        "environment": _environment(result),
    }


def _split_benchmark(benchmark: str, rule: MetricRule) -> tuple[str, str]:
    body = benchmark.removesuffix(rule.benchmark_suffix) if rule.benchmark_suffix else benchmark
    kernel, _, mode = body.rpartition("/")
    if not kernel or not mode:
        raise ValueError(f"sourceNative.benchmark is not <kernel>/<mode>: {benchmark!r}")
    return kernel, mode


def _split_external_id(external: str, benchmark: str) -> tuple[str, str, str]:
    """(provider, gpu slug, workload slug) from the external id."""
    if not external.startswith(benchmark + "/"):
        raise ValueError(f"externalId does not start with the benchmark: {external!r}")
    parts = external.removeprefix(benchmark + "/").split("/")
    if len(parts) < 4:
        raise ValueError(f"externalId has too few parts: {external!r}")
    # A provider never holds "/" upstream, but joining keeps one that did intact.
    return "/".join(parts[:-3]), parts[-3], parts[-2]


def _gpu_name(slug: str, hardware_spec: Mapping[str, Any]) -> str:
    if hardware_spec.get("vendor") is None:
        return hardware_spec["product"]
    gpu = lookup_gpu_by_slug(slug)
    if gpu is None:
        raise ValueError(f"GPU {slug!r} is catalogued in the record but not in this catalog")
    return gpu.gpu_name


def _record_rule(spec: Mapping[str, Any]) -> MetricRule:
    for rule in RULES.values():
        if rule.block in spec:
            return rule
    raise ValueError("run.spec has neither a timing nor a memory block")


@lru_cache(maxsize=4096)
def _decoded_slug(slug: str) -> dict[str, Any]:
    # An import reads many records of few workloads; decoding a slug was a third of its time.
    # Callers get a copy (values are scalars), so the cached dict is never changed.
    return decode_workload_slug(slug)


def _observed_at(text: str) -> datetime:
    return datetime.strptime(text, OBSERVED_AT + ".%fZ")


def result_from_kernelindex(record: Mapping[str, Any]) -> dict[str, Any]:
    """The warehouse result a record describes (the inverse of ``kernelindex_record``).

    The record does not say which parameter was the x axis, nor the upstream key spellings
    or x label: ``x_name``, ``x_label`` and ``x_value`` are None and ``config`` holds every
    workload parameter under its slug name, so re-exporting gives the identical record.
    Raises ``ValueError`` for a record that does not validate.
    """
    errors = validate_record(record)
    if errors:
        # Imports come from outside; a clear refusal beats a KeyError deep in the parsing.
        raise ValueError(f"invalid kernelindex record ({len(errors)} errors): {errors[0]}")
    spec = record["run"]["spec"]
    rule = _record_rule(spec)
    native = spec["sourceNative"]
    kernel, mode = _split_benchmark(native["benchmark"], rule)
    provider, slug, workload = _split_external_id(native["externalId"], native["benchmark"])
    metrics = native["metrics"]
    result: dict[str, Any] = {
        "kernel": kernel,
        "operation_mode": mode,
        "provider": provider,
        "metric": rule.metric,
        "unit": rule.unit,
        "gpu_name": _gpu_name(slug, record["environment"]["spec"]["hardware"]),
        "x_name": None,
        "x_label": None,
        "x_value": None,
        "config": dict(_decoded_slug(workload)),
        "liger_version": record["run"]["metadata"].get("labels", {}).get("liger_version"),
        **{f"p{q}": metrics[f"{rule.native_prefix}_{q}"] for q in ("20", "50", "80")},
        "observed_at": _observed_at(spec["observedAt"]),
    }
    for key in DIGEST_KEYS:
        result[key] = spec[_camel(key)]
    return result
