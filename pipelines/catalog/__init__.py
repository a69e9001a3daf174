"""Catalogs of facts the upstream CSV does not carry: GPU hardware and kernel titles."""

from pipelines.catalog.gpus import GpuInfo, gpu_slug, lookup_gpu
from pipelines.catalog.kernels import kernel_title

__all__ = ["GpuInfo", "gpu_slug", "kernel_title", "lookup_gpu"]
