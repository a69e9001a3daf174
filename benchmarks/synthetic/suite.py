"""The benchmark matrix synthetic mirrors draw from: upstream's sweeps, series, GPUs and versions.

``suite.json`` is derived from the upstream mirror by ``benchmarks/derive_suite.py``; it holds
the shape of the matrix (which kernel is swept over which x values with which config, by which
providers, modes and metrics, at what typical magnitude), never a measurement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files

from packaging.version import Version

MAIN_STEMS = ("all_benchmark_data", "all_benchmark_data_cutedsl", "all_benchmark_data_cutile")
GH_PAGES = "gh-pages"


@dataclass(frozen=True)
class Group:
    """One series over one sweep: the rows a benchmark script writes for one provider/mode/metric."""

    order: int
    kernel: str
    x_name: str
    x_label: str
    config: str
    provider: str
    mode: str
    metric: str
    unit: str
    x_values: tuple[str, ...]
    stems: frozenset[str]
    p50: float
    slope: float
    spread_lo: float
    spread_hi: float
    equal_quantiles: float
    variant: int = 0

    @property
    def numeric(self) -> bool:
        return all(_is_number(x) for x in self.x_values)


@dataclass(frozen=True)
class Suite:
    gpus: dict[str, int]
    versions: tuple[str, ...]
    groups: tuple[Group, ...]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def x_number(group: Group, index: int) -> float:
    """The x value as a number; named values (model configs) count as positions."""
    text = group.x_values[index]
    return float(text) if _is_number(text) else float(index + 1)


@cache
def load_suite() -> Suite:
    data = json.loads(files(__package__).joinpath("suite.json").read_text(encoding="utf-8"))
    groups = []
    for sweep in data["sweeps"]:
        for series in sweep["series"]:
            groups.append(
                Group(
                    order=len(groups),
                    kernel=sweep["kernel"],
                    x_name=sweep["x_name"],
                    x_label=sweep["x_label"],
                    config=sweep["config"],
                    x_values=tuple(sweep["x_values"]),
                    stems=frozenset(sweep["stems"]),
                    **series,
                )
            )
    return Suite(dict(data["gpus"]), tuple(data["versions"]), tuple(groups))


def pool(suite: Suite, stem: str) -> list[Group]:
    """Groups a source may run: a main-branch file its own; nightly runs the whole matrix
    (the years ahead bring more backends to the nightly job)."""
    if stem == GH_PAGES:
        return list(suite.groups)
    return [g for g in suite.groups if stem in g.stems]


def variant(group: Group, n: int) -> Group | None:
    """The n-th extension of a numeric sweep: the same series over the next, larger x values.

    Used only when rows per revision exceed the matrix, so that a bigger nightly job sweeps
    further rather than repeating points. Named sweeps have no extension.
    """
    if n == 0:
        return group
    if not group.numeric:
        return None
    scale = 2 ** (n * len(group.x_values))
    return replace(group, x_values=tuple(_scaled(x, scale) for x in group.x_values), variant=n)


def _scaled(text: str, scale: int) -> str:
    value = float(text) * scale
    return str(int(value)) if value.is_integer() else repr(value)


def next_version(text: str) -> str:
    """The release after ``text``: patches, with a minor release every sixth."""
    v = Version(text)
    major, minor, patch = (*v.release, 0, 0)[:3]
    return f"{major}.{minor + 1}.0" if patch >= 5 else f"{major}.{minor}.{patch + 1}"
