"""Upstream CSV text, byte for byte the way upstream writes it.

Upstream's files come from pandas ``to_csv``: the 15 columns in a fixed order, minimal quoting
(a field is quoted only when it holds a comma, a quote or a line break, quotes doubled), CRLF
line endings, floats as Python ``repr`` of float32 measurements.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from benchmarks.synthetic.suite import Group, x_number

HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,"
    "x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,"
    "liger_version"
)
EOL = "\r\n"
TIMESTAMP = "%Y-%m-%d %H:%M:%S"
# Relative speed of each GPU (H100 SXM = 1); unknown GPUs run a little slower.
GPU_SPEED = {
    "NVIDIA B200": 0.6,
    "NVIDIA H200": 0.85,
    "NVIDIA H100 80GB HBM3": 1.0,
    "NVIDIA H100 NVL": 1.05,
    "NVIDIA H100 PCIe": 1.2,
    "NVIDIA A100-SXM4-80GB": 1.6,
    "NVIDIA A100-SXM4-40GB": 1.65,
    "NVIDIA GeForce RTX 4090": 1.9,
    "NVIDIA GeForce RTX 3090": 2.6,
}
SPEED_NOISE = 0.03  # run-to-run lognormal sigma of a timing
SPEEDUP_PER_RELEASE = 0.995  # kernels get a little faster release by release


def field(text: str) -> str:
    """A CSV field with pandas' minimal quoting."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def measurements(group: Group, gpu: str, release: int, rng: np.random.Generator) -> list[tuple[str, str, str]]:
    """(p50, p20, p80) text per x value, with p20 <= p50 <= p80 after float32 rounding."""
    n = len(group.x_values)
    x = np.maximum([x_number(group, i) for i in range(n)], 1e-9)
    base = group.p50 * (x / x[0]) ** group.slope
    if group.metric == "speed":
        speed = GPU_SPEED.get(gpu, 1.3) * SPEEDUP_PER_RELEASE**release
        base = base * speed * rng.lognormal(0.0, SPEED_NOISE, n)
    base = np.clip(base, 0.0, 1e30)
    p50 = base.astype(np.float32)
    p20 = np.minimum((base * (1 - group.spread_lo * rng.uniform(0.5, 1.5, n))).astype(np.float32), p50)
    p80 = np.maximum((base * (1 + group.spread_hi * rng.uniform(0.5, 1.5, n))).astype(np.float32), p50)
    equal = rng.random(n) < group.equal_quantiles
    p20, p80 = np.where(equal, p50, p20), np.where(equal, p50, p80)
    texts = [[repr(v) for v in a.astype(np.float64).tolist()] for a in (p50, p20, p80)]
    return list(zip(*texts, strict=True))


def group_lines(
    group: Group, gpu: str, version: str, release: int, when: datetime, rng: np.random.Generator
) -> list[str]:
    """The rows of one group as one benchmark script invocation writes them."""
    head = ",".join(
        field(t)
        for t in (group.kernel, group.provider, group.mode, group.metric, group.unit, group.x_name, group.x_label)
    )
    tail = f"{field(group.config)},{field(gpu)},{when.strftime(TIMESTAMP)},{version}"
    values = measurements(group, gpu, release, rng)
    return [
        f"{head},{field(x)},{p50},{p20},{p80},{tail}" for x, (p50, p20, p80) in zip(group.x_values, values, strict=True)
    ]


def file_bytes(lines: list[str], quirk: str | None = None) -> bytes:
    """A whole CSV file. Quirks seen upstream: a trailing blank line, no final line break."""
    text = EOL.join([HEADER, *lines]) + EOL
    if quirk == "blank-line":
        text += EOL
    elif quirk == "no-final-eol":
        text = text[: -len(EOL)]
    return text.encode("utf-8")
