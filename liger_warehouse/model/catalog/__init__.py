"""Catalogs of facts the upstream CSV does not carry: GPU hardware and kernel titles."""

from liger_warehouse.model.catalog.gpus import GpuInfo, gpu_slug, lookup_gpu
from liger_warehouse.model.catalog.kernels import kernel_title

__all__ = ["GpuInfo", "gpu_slug", "kernel_title", "lookup_gpu"]
