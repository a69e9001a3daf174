"""GPU and kernel catalogs: coverage of the mirror data and internal consistency."""

from __future__ import annotations

import csv
import gzip
import re
from functools import cache
from pathlib import Path

import pytest

from liger_warehouse.model.catalog.gpus import GpuInfo, catalog, gpu_slug, lookup_gpu, lookup_gpu_by_slug
from liger_warehouse.model.catalog.kernels import KERNEL_TITLES, kernel_title
from tests.conftest import MIRROR, require_full_mirror

ARCHITECTURE = {"nvidia": r"sm_\d{2,3}", "amd": r"gfx[0-9a-f]{3,4}", "intel": r"pvc"}


@cache
def _mirror_values(mirror: Path) -> dict[str, frozenset[str]]:
    values: dict[str, set[str]] = {"gpu_name": set(), "kernel_name": set()}
    for path in sorted(mirror.glob("**/*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.DictReader(handle):
                for column, seen in values.items():
                    seen.add(row[column])
    return {column: frozenset(seen - {""}) for column, seen in values.items()}


def test_every_mirror_gpu_is_catalogued() -> None:
    # The GPUs of the whole snapshot: the fixture cut holds only the newest runs' few.
    gpus = _mirror_values(require_full_mirror())["gpu_name"]
    assert len(gpus) >= 9
    assert sorted(name for name in gpus if name not in catalog()) == []


def test_every_mirror_kernel_has_a_title() -> None:
    kernels = _mirror_values(MIRROR)["kernel_name"]
    assert len(kernels) == 38
    assert sorted(name for name in kernels if kernel_title(name) is None) == []


def test_reference_gpu_entry() -> None:
    assert lookup_gpu("NVIDIA A100-SXM4-80GB") == GpuInfo(
        gpu_name="NVIDIA A100-SXM4-80GB",
        vendor="nvidia",
        product="NVIDIA A100",
        form_factor="SXM4-80GB",
        architecture="sm_80",
        memory_gb=80,
        short_name="A100-SXM4-80GB",
    )


@pytest.mark.parametrize(
    ("gpu_name", "architecture", "memory_gb"),
    [
        ("NVIDIA H100 80GB HBM3", "sm_90", 80),
        ("NVIDIA A100-SXM4-80GB", "sm_80", 80),
        ("NVIDIA A100-SXM4-40GB", "sm_80", 40),
        ("NVIDIA GeForce RTX 3090", "sm_86", 24),
        ("NVIDIA GeForce RTX 4090", "sm_89", 24),
        ("NVIDIA H200", "sm_90", 141),
        ("NVIDIA H100 NVL", "sm_90", 94),
        ("NVIDIA H100 PCIe", "sm_90", 80),
        ("NVIDIA B200", "sm_100", 180),
        ("NVIDIA A10G", "sm_86", 24),
        ("NVIDIA L4", "sm_89", 24),
        ("NVIDIA L40S", "sm_89", 48),
        ("NVIDIA GH200 480GB", "sm_90", 96),
        ("NVIDIA GeForce RTX 5090", "sm_120", 32),
        ("AMD Instinct MI300X", "gfx942", 192),
        ("AMD Instinct MI250X / MI250", "gfx90a", 128),
    ],
)
def test_architectures(gpu_name: str, architecture: str, memory_gb: int) -> None:
    gpu = lookup_gpu(gpu_name)
    assert gpu is not None
    assert (gpu.architecture, gpu.memory_gb) == (architecture, memory_gb)


@pytest.mark.parametrize("entry", sorted(catalog().values(), key=lambda gpu: gpu.gpu_name))
def test_catalog_entries_are_consistent(entry: GpuInfo) -> None:
    assert re.fullmatch(ARCHITECTURE[entry.vendor], entry.architecture)
    assert isinstance(entry.memory_gb, int) and entry.memory_gb > 0
    # The form factor carries the memory size, like the reference "SXM4-80GB".
    assert entry.form_factor.endswith(f"-{entry.memory_gb}GB")
    assert entry.short_name and entry.short_name in entry.gpu_name
    assert entry.product.split()[0].lower() in (entry.vendor, "intel")


def test_gpu_slugs_are_unique_and_reversible() -> None:
    slugs = [gpu_slug(name) for name in catalog()]
    assert len(set(slugs)) == len(slugs)
    for name in catalog():
        assert lookup_gpu_by_slug(gpu_slug(name)).gpu_name == name


@pytest.mark.parametrize(
    ("gpu_name", "slug"),
    [
        ("NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb"),
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
        ("AMD Instinct MI250X / MI250", "amd-instinct-mi250x-mi250"),
        ("Intel(R) Data Center GPU Max 1550", "intel-r-data-center-gpu-max-1550"),
        ("  Weird__GPU  ", "weird-gpu"),
    ],
)
def test_gpu_slug(gpu_name: str, slug: str) -> None:
    assert gpu_slug(gpu_name) == slug


def test_unknown_gpu_is_none_and_lookup_tolerates_spelling() -> None:
    assert lookup_gpu("NVIDIA Imaginary X1") is None
    assert lookup_gpu("") is None
    assert lookup_gpu("nvidia  h200").gpu_name == "NVIDIA H200"


def test_kernel_titles() -> None:
    assert kernel_title("embedding") == "Embedding lookup"
    assert kernel_title("fused_linear_cross_entropy") == "Fused linear cross-entropy"
    assert kernel_title("rms_norm") == "RMSNorm"
    assert kernel_title("rope") == "RoPE"
    assert kernel_title("dyt_beta=True") == "DyT (beta=True)"
    assert kernel_title("no_such_kernel") is None
    titles = list(KERNEL_TITLES.values())
    assert len(set(titles)) == len(titles)
    assert all(title.strip() == title and title for title in titles)
