"""Dimension rows and their digests, computed once per distinct identity.

Identity fields (what the digest covers) are deliberately few: catalog attributes such as a
GPU's architecture are looked up, not hashed, so improving a catalog never changes a digest.
"""

from __future__ import annotations

import logging
import math
from pathlib import PurePosixPath

from liger_warehouse.model.catalog.gpus import lookup_gpu
from liger_warehouse.model.digests import canonical_json, digest, flat_digest
from liger_warehouse.model.tables import DIMENSIONS
from liger_warehouse.model.workload import workload_params, workload_slug
from liger_warehouse.normalize.rows import (
    Row,
    backend,
    environment_identity,
    harness,
    implementation_identity,
    protocol_identity,
    workload_identity,
)

log = logging.getLogger(__name__)


def _number_or_none(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _params(row: Row) -> list[dict]:
    return [
        {"name": p.name, "type": p.type, "value_text": p.value_text, "value_num": p.value_num}
        for p in workload_params(row.x_name, row.x_value, row.config)
    ]


class Dimensions:
    """Collects the dimension rows first seen in this refresh."""

    def __init__(self, known: dict[str, set[str]]) -> None:
        self.known = known
        self.new: dict[str, dict[str, dict]] = {name: {} for name in DIMENSIONS}
        self._cache: dict[tuple, str] = {}
        self.unknown_gpus: set[str] = set()

    def _add(self, table: str, value: str, make_row) -> str:
        if value not in self.known[table] and value not in self.new[table]:
            self.new[table][value] = make_row(value)
        return value

    def _memo(self, key: tuple, compute) -> str:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def protocol(self, row: Row, stem: str | None) -> str:
        def compute() -> str:
            ident = protocol_identity(row, stem)
            return self._add(
                "dim_protocol",
                digest(ident),
                lambda d: {
                    "protocol_digest": d,
                    **{k: ident[k] for k in ident if k != "quantiles"},
                    "quantiles": ident["quantiles"],
                },
            )

        return self._memo(("p", row.mode, row.metric, row.unit, harness(stem)), compute)

    def workload(self, row: Row) -> str:
        def compute() -> str:
            ident = workload_identity(row)
            return self._add(
                "dim_workload",
                digest(ident),
                lambda d: {
                    "workload_digest": d,
                    "kernel": row.kernel,
                    "x_name": row.x_name,
                    "x_label": row.x_label,
                    "x_value": row.x_value,
                    "x_value_num": _number_or_none(row.x_value),
                    "config_json": canonical_json(row.config),
                    "params": _params(row),
                    "slug": workload_slug(row.x_name, row.x_value, row.config),
                },
            )

        return self._memo(("w", row.kernel, row.x_name, row.x_label, row.x_value, row.config_text), compute)

    def environment(self, row: Row) -> str:
        def compute() -> str:
            return self._add(
                "dim_environment",
                digest(environment_identity(row)),
                self._environment_row(row.gpu_name),
            )

        return self._memo(("e", row.gpu_name), compute)

    def _environment_row(self, gpu_name: str):
        def make(d: str) -> dict:
            gpu = lookup_gpu(gpu_name)
            if gpu is None:
                self.unknown_gpus.add(gpu_name)
                log.warning("GPU %r is not in the catalog; ingested with null hardware fields", gpu_name)
            return {
                "environment_digest": d,
                "gpu_name": gpu_name,
                "vendor": gpu.vendor if gpu else None,
                "product": gpu.product if gpu else None,
                "form_factor": gpu.form_factor if gpu else None,
                "architecture": gpu.architecture if gpu else None,
                "in_catalog": gpu is not None,
            }

        return make

    def implementation(self, row: Row, stem: str | None) -> str:
        def compute() -> str:
            ident = implementation_identity(row, stem)
            return self._add("dim_implementation", digest(ident), lambda d: {"implementation_digest": d, **ident})

        return self._memo(("i", row.provider, row.liger_version, stem), compute)

    def series(self, row: Row, stem: str | None, protocol: str, workload: str, environment: str) -> str:
        """A series: same kernel, mode, provider, metric, GPU and workload, across versions."""
        return self._memo(
            ("s", protocol, workload, environment, row.provider, stem),
            # A flat object of strings (and a null backend): flat_digest is digest without the
            # generic encoder.
            lambda: flat_digest(
                {
                    "protocol_digest": protocol,
                    "workload_digest": workload,
                    "environment_digest": environment,
                    "provider": row.provider,
                    "backend": backend(stem, row.provider),
                }
            ),
        )


def path_stem(path: str) -> str:
    return PurePosixPath(path).stem
