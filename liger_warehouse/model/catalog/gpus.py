"""GPU catalog: hardware facts for the raw ``gpu_name`` a benchmark host reports.

Upstream rows carry only ``torch.cuda.get_device_name()``; vendor, architecture and the like
come from ``gpus.json``. A GPU missing from it is not an error: callers ingest the row with
null hardware fields and warn, so adding a catalog entry later fills them in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from types import MappingProxyType
from typing import Any

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class GpuInfo:
    gpu_name: str
    vendor: str
    product: str
    form_factor: str
    architecture: str
    memory_gb: int
    short_name: str


def gpu_slug(gpu_name: str) -> str:
    """Lower-case slug of a raw GPU name: ``NVIDIA A100-SXM4-80GB`` -> ``nvidia-a100-sxm4-80gb``."""
    return _NON_ALNUM.sub("-", gpu_name.lower()).strip("-")


def _entry(gpu_name: str, fields: dict[str, Any]) -> GpuInfo:
    return GpuInfo(gpu_name=gpu_name, **fields)


@cache
def catalog() -> MappingProxyType[str, GpuInfo]:
    """Every catalogued GPU, keyed by raw ``gpu_name`` (read-only, loaded once)."""
    text = files(__package__).joinpath("gpus.json").read_text(encoding="utf-8")
    gpus = json.loads(text)["gpus"]
    return MappingProxyType({name: _entry(name, fields) for name, fields in gpus.items()})


@cache
def _by_slug() -> MappingProxyType[str, GpuInfo]:
    return MappingProxyType({gpu_slug(info.gpu_name): info for info in catalog().values()})


def lookup_gpu(gpu_name: str) -> GpuInfo | None:
    """The catalog entry for a raw GPU name, or None when the GPU is not catalogued.

    An exact match wins; otherwise the name is matched by its slug, so case, spacing and
    punctuation differences ("NVIDIA  H200", "nvidia h200") still find the entry.
    """
    if not isinstance(gpu_name, str):
        return None
    found = catalog().get(gpu_name)
    return found if found is not None else _by_slug().get(gpu_slug(gpu_name))


def lookup_gpu_by_slug(slug: str) -> GpuInfo | None:
    """The catalog entry whose ``gpu_slug`` is ``slug`` (used to read records back)."""
    return _by_slug().get(slug)
