"""The import graph, read from the source (ast): the tree reads as the pipeline and stays that way.

Every module of ``liger_warehouse`` (the core) and ``pipelines`` (the Dagster code location)
belongs to a layer; a module imports only from its own layer or lower ones, the graph has no
circles, the core imports no Dagster outside the CLI's job runner, and no module grows past
``MAX_LINES`` (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PACKAGES = ("liger_warehouse", "pipelines")

# Lowest first. A module's layer is its package under liger_warehouse/ (or the module, for
# settings.py); everything under pipelines/ is the top layer. Layers that share a rank do not
# depend on each other's order (only the no-circle rule binds them).
LAYERS: list[set[str]] = [
    {"model", "settings"},  # schemas, digests, revisions, versions, workloads, catalogs; the settings
    {"runtime"},  # failpoints and progress (used by store and upstream), summaries, status
    {"store"},  # bytes: the raw snapshots, local or on an object store
    {"lake"},  # the DuckLake catalog and data: connections, sql/ objects, maintenance
    {"upstream"},
    {"normalize"},
    {"audit", "analysis"},  # checks and change points, run inside the publishing transaction
    {"build"},  # the publishing transaction
    {"triage"},  # what people say of the verdicts: one event per command, into the lake
    {"export", "report", "alerts"},
    {"imports"},  # kernelindex records come in through export's rules
    {"cli"},
    {"pipelines"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}

# The CLI runs Dagster jobs in-process and records them in the Dagster instance: the only core
# modules that may import dagster (and, inside a function only, the code location).
DAGSTER_RUNNER = {"liger_warehouse.cli.instance", "liger_warehouse.cli.warehouse", "liger_warehouse.cli.export"}

MAX_LINES = 400
# Modules still over MAX_LINES, with their length when listed: the list may only shrink.
OVERSIZED: dict[str, int] = {}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (or package)
    lazy: bool  # inside a function


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((PROJECT / package).rglob("*.py"))}


def _imports(name: str, path: Path, modules: set[str]) -> list[Import]:
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend(Import(name, alias.name, inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                assert child.level == 0, f"{name}: relative import of {child.module}"
                for alias in child.names:
                    candidate = f"{child.module}.{alias.name}"
                    found.append(Import(name, candidate if candidate in modules else child.module, inside))
            visit(child, inside)

    visit(ast.parse(path.read_text(), filename=str(path)), lazy=False)
    return found


def _graph() -> list[Import]:
    sources = _sources()
    return [edge for name, path in sources.items() for edge in _imports(name, path, set(sources))]


def _layer(module: str) -> str:
    parts = module.split(".")
    return "pipelines" if parts[0] == "pipelines" else parts[1] if len(parts) > 1 else parts[0]


def _internal(edge: Import) -> bool:
    return edge.target.split(".")[0] in PACKAGES


def test_every_core_package_has_a_layer():
    unplaced = {_layer(m) for m in _sources() if m != "liger_warehouse"} - set(RANK)
    assert not unplaced, f"give these a layer in LAYERS: {sorted(unplaced)}"


def test_no_import_runs_up_a_layer():
    upward = []
    for edge in filter(_internal, _graph()):
        if edge.source == "liger_warehouse" or edge.target == "liger_warehouse":
            continue
        source, target = _layer(edge.source), _layer(edge.target)
        if RANK[target] <= RANK[source]:
            continue
        if edge.source in DAGSTER_RUNNER and target == "pipelines" and edge.lazy:
            continue  # the CLI's job runner loads the definitions when it runs a job
        upward.append(f"{edge.source} ({source}) imports {edge.target} ({target})")
    assert not upward, "\n".join(upward)


def test_no_import_circles():
    graph: dict[str, set[str]] = {}
    for edge in filter(_internal, _graph()):
        graph.setdefault(edge.source, set()).add(edge.target)
    circles, state = [], {}  # state: 1 while on the DFS path, 2 when done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    assert not circles, "\n".join(circles)


def test_the_core_imports_no_dagster_outside_the_cli_runner():
    dagster = {
        edge.source
        for edge in _graph()
        if edge.source.startswith("liger_warehouse") and edge.target.split(".")[0].startswith("dagster")
    }
    assert dagster <= DAGSTER_RUNNER, sorted(dagster - DAGSTER_RUNNER)


def test_the_core_never_imports_the_code_location_at_import_time():
    eager = [e for e in _graph() if e.source.startswith("liger_warehouse") and _layer(e.target) == "pipelines"]
    assert all(e.lazy for e in eager), [f"{e.source} imports {e.target}" for e in eager if not e.lazy]


def test_no_module_over_the_line_limit():
    lengths = {str(path.relative_to(PROJECT)): len(path.read_text().splitlines()) for path in _sources().values()}
    over = {path: n for path, n in lengths.items() if n > MAX_LINES and path not in OVERSIZED}
    assert not over, f"over {MAX_LINES} lines: {over}"
    grown = {path: (lengths.get(path), n) for path, n in OVERSIZED.items() if lengths.get(path, 0) > n}
    assert not grown, f"listed as oversized and grown since (now, listed): {grown}"
    fixed = [path for path in OVERSIZED if lengths.get(path, 0) <= MAX_LINES]
    assert not fixed, f"no longer over {MAX_LINES} lines: take them off OVERSIZED: {fixed}"
