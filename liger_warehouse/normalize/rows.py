"""Validate one upstream row and turn it into typed values plus its dimension identities.

A row that fails validation is quarantined with the reason; nothing in it is guessed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from liger_warehouse.model.versions import parse_version
from liger_warehouse.model.workload import parse_config
from liger_warehouse.normalize.csvfile import COLUMNS as COLUMN_NAMES

HARNESS = "liger-kernel-bench"
MAIN_STEM = "all_benchmark_data"
STATISTIC = "median"
QUANTILES = (0.5, 0.2, 0.8)
TIMESTAMP_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")
# Upstream clocks drift a little; a row observed later than this after ingest is not a reading.
FUTURE_SLACK = timedelta(days=1)
BACKEND_BY_STEM = {
    MAIN_STEM: "triton",
    "all_benchmark_data_cutedsl": "cutedsl",
    "all_benchmark_data_cutile": "cutile",
}
BACKENDS = frozenset(BACKEND_BY_STEM.values())
# A provider name's words: "liger_triton_fp32" and "liger-fp32-accum" are three each.
_PROVIDER_WORD = re.compile(r"[^a-z0-9]+")


# C0 controls and DEL, except tab and the line breaks a quoted JSON config may hold.
CONTROL_CHARACTERS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_CONTROL = re.compile(CONTROL_CHARACTERS)


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


# Rows of one benchmark share their timestamp, config and version text: parsing each distinct
# text once takes strptime and json.loads off the per-row path. Cached configs are shared
# between rows, so nothing may modify a Row's config.
@lru_cache(maxsize=4096)
def _parse_timestamp(text: str) -> datetime | None:
    for fmt in TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


_parse_config = lru_cache(maxsize=4096)(parse_config)


@lru_cache(maxsize=1024)
def _is_version(text: str) -> bool:
    return parse_version(text) is not None


def _timestamp(text: str, now: datetime) -> datetime:
    value = _parse_timestamp(text)
    if value is None:
        raise RowRejected(f"timestamp is not a date and time: {text[:40]!r}")
    if value > now + FUTURE_SLACK:
        raise RowRejected(f"timestamp is in the future: {text!r}")
    return value


def _required(names: tuple[str, ...], fields: list[str]) -> None:
    for name, value in zip(names, fields, strict=False):
        if not value.strip():
            raise RowRejected(f"{name} is empty")


def _printable(fields: list[str]) -> None:
    # Names end up in file names, URLs and terminals; a NUL or an escape there is never data.
    for name, value in zip(COLUMN_NAMES, fields, strict=False):
        if bad := _CONTROL.search(value):
            raise RowRejected(f"{name} holds a control character ({ord(bad.group()):#04x})")


def parse_row(fields: list[str], now: datetime | None = None) -> Row:
    """Typed values of one row (fields in canonical column order) or ``RowRejected``."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    kernel, provider, mode, metric, unit, x_name, x_label, x_value = fields[:8]
    _required(
        ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit"),
        fields,
    )
    _printable(fields)
    p50, p20, p80 = (
        _number(n, t) for n, t in zip(("y_value_50", "y_value_20", "y_value_80"), fields[8:11], strict=True)
    )
    if not p20 <= p50 <= p80:
        raise RowRejected(f"quantiles out of order: p20={p20} p50={p50} p80={p80}")
    config_text, gpu_name, stamp, version = fields[11:15]
    try:
        config = _parse_config(config_text)
    except ValueError as exc:
        raise RowRejected(f"extra_benchmark_config_str: {exc}") from None
    if not gpu_name.strip():
        raise RowRejected("gpu_name is empty")
    if not _is_version(version):
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


def named_backend(provider: str) -> str | None:
    """The backend a provider's name says (``liger_triton``, ``liger-cutile-v2``), else None."""
    return next((word for word in _PROVIDER_WORD.split(provider.lower()) if word in BACKENDS), None)


def backend(stem: str | None, provider: str) -> str | None:
    """The Liger kernel backend of a row (docs/SCHEMA.md): a backend the provider names wins
    (``liger_triton`` is Triton in any file); another Liger provider (``liger*``) runs on the
    backend of the upstream file it came from; a baseline (torch, huggingface, ...) has none."""
    if named := named_backend(provider):
        return named
    if provider.lower().startswith("liger"):
        return BACKEND_BY_STEM.get(stem or MAIN_STEM, "triton")
    return None


def harness(stem: str | None) -> str:
    """The benchmark suite a row was published by: ``liger-kernel-bench`` for the main CSV and
    the gh-pages runs, ``liger-kernel-bench:<name>`` for ``all_benchmark_data_<name>.csv``."""
    if stem is None or stem == MAIN_STEM:
        return HARNESS
    return f"{HARNESS}:{stem.removeprefix(MAIN_STEM + '_')}"


def stem_of_harness(name: str) -> str | None:
    """The upstream file stem whose rows ``harness`` names; None for another harness."""
    if name == HARNESS:
        return MAIN_STEM
    suite = name.removeprefix(HARNESS + ":")
    return f"{MAIN_STEM}_{suite}" if suite != name and suite else None


def protocol_identity(row: Row, stem: str | None) -> dict:
    return {
        "harness": harness(stem),
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
