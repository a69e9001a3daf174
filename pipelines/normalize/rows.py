"""Validate one upstream row and turn it into typed values plus its dimension identities.

A row that fails validation is quarantined with the reason; nothing in it is guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipelines.versions import parse_version
from pipelines.workload import parse_config

HARNESS = "liger-kernel-bench"
STATISTIC = "median"
QUANTILES = (0.5, 0.2, 0.8)
TIMESTAMP_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")
# Upstream clocks drift a little; a row observed later than this after ingest is not a reading.
FUTURE_SLACK = timedelta(days=1)
BACKEND_BY_STEM = {
    "all_benchmark_data": "triton",
    "all_benchmark_data_cutedsl": "cutedsl",
    "all_benchmark_data_cutile": "cutile",
}
BACKEND_BY_PROVIDER_SUFFIX = {"_triton": "triton", "_cutedsl": "cutedsl", "_cutile": "cutile"}


class RowRejected(ValueError):
    """A row that goes to ``quarantined_row``; the message is the reason."""


@dataclass(frozen=True)
class Row:
    kernel: str
    provider: str
    mode: str
    metric: str
    unit: str
    x_name: str
    x_label: str
    x_value: str
    p50: float
    p20: float
    p80: float
    config_text: str
    config: dict
    gpu_name: str
    observed_at: datetime
    liger_version: str


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RowRejected(f"{name} is not a number: {text[:40]!r}") from None
    if not math.isfinite(value):
        raise RowRejected(f"{name} is not finite: {text!r}")
    if value < 0:
        raise RowRejected(f"{name} is negative: {text!r}")
    return value


def _timestamp(text: str, now: datetime) -> datetime:
    for fmt in TIMESTAMP_FORMATS:
        try:
            value = datetime.strptime(text, fmt)
        except ValueError:
            continue
        if value > now + FUTURE_SLACK:
            raise RowRejected(f"timestamp is in the future: {text!r}")
        return value
    raise RowRejected(f"timestamp is not a date and time: {text[:40]!r}")


def _required(names: tuple[str, ...], fields: list[str]) -> None:
    for name, value in zip(names, fields, strict=False):
        if not value.strip():
            raise RowRejected(f"{name} is empty")


def parse_row(fields: list[str], now: datetime | None = None) -> Row:
    """Typed values of one row (fields in canonical column order) or ``RowRejected``."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    kernel, provider, mode, metric, unit, x_name, x_label, x_value = fields[:8]
    _required(
        ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit"),
        fields,
    )
    p50, p20, p80 = (
        _number(n, t)
        for n, t in zip(("y_value_50", "y_value_20", "y_value_80"), fields[8:11], strict=True)
    )
    if not p20 <= p50 <= p80:
        raise RowRejected(f"quantiles out of order: p20={p20} p50={p50} p80={p80}")
    config_text, gpu_name, stamp, version = fields[11:15]
    try:
        config = parse_config(config_text)
    except ValueError as exc:
        raise RowRejected(f"extra_benchmark_config_str: {exc}") from None
    if not gpu_name.strip():
        raise RowRejected("gpu_name is empty")
    if parse_version(version) is None:
        raise RowRejected(f"liger_version is not a version: {version[:40]!r}")
    observed = _timestamp(stamp, now)
    return Row(
        kernel,
        provider,
        mode,
        metric,
        unit,
        x_name,
        x_label,
        x_value,
        p50,
        p20,
        p80,
        config_text,
        config,
        gpu_name,
        observed,
        version,
    )


def backend(stem: str | None, provider: str) -> str:
    """The kernel backend: a provider suffix wins, else the upstream file it came from."""
    for suffix, name in BACKEND_BY_PROVIDER_SUFFIX.items():
        if provider.endswith(suffix):
            return name
    return BACKEND_BY_STEM.get(stem or "", "triton")


def protocol_identity(row: Row) -> dict:
    return {
        "harness": HARNESS,
        "timed_pass": row.mode,
        "metric": row.metric,
        "unit": row.unit,
        "statistic": STATISTIC,
        "quantiles": list(QUANTILES),
    }


def workload_identity(row: Row) -> dict:
    return {
        "kernel": row.kernel,
        "x_name": row.x_name,
        "x_label": row.x_label,
        "x_value": row.x_value,
        "config": row.config,
    }


def environment_identity(row: Row) -> dict:
    return {"gpu_name": row.gpu_name}


def implementation_identity(row: Row, stem: str | None) -> dict:
    return {
        "provider": row.provider,
        "liger_version": row.liger_version,
        "backend": backend(stem, row.provider),
    }


def result_identity(source: str, source_key: str, row_text: str) -> dict:
    """A result is one distinct row text within one source (a main-branch path or a run)."""
    return {"source": source, "source_key": source_key, "row": row_text}
