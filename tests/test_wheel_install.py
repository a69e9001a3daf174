"""A wheel install works: the analytic views ship inside the package (``sql/`` installed as
``liger_warehouse.sql``), so ``liger-warehouse refresh`` from a wheel, in a fresh virtual environment
and away from the repository, publishes a lake whose catalog holds every table, view and macro
``sql/`` defines.

The wheel is built by pip (build isolation: setuptools from the package index) and installed
alone (``--no-deps``) into a new venv. Its dependencies are the ones this environment already
resolved, shown to the new venv as a site directory that holds only the distributions the wheel's
own ``Requires-Dist`` reaches (extras left out): a module the package imports without declaring
it is missing there, as in a user's install. Resolving them again against the package index took
a minute of the suite's CPU and tests pip, not this package.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

import duckdb
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.lake.objects import MissingViews, create_sql_objects
from liger_warehouse.model.tables import STORED
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1]
SQL = PROJECT / "sql"
DEFINES = re.compile(r"create\s+or\s+replace\s+(view|macro)\s+(\w+)", re.IGNORECASE)


def _defined() -> dict[str, set[str]]:
    """What sql/ defines, read from the files themselves (macros/, views/): view and macro names."""
    found: dict[str, set[str]] = {"view": set(), "macro": set()}
    for path in SQL.glob("*/*.sql"):
        for kind, name in DEFINES.findall(path.read_text()):
            found[kind.lower()].add(name)
    return found


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def _requires(wheel: Path) -> list[str]:
    """The wheel's own ``Requires-Dist`` lines, read from its METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(metadata).decode()).get_all("Requires-Dist") or []


def _closure(requires: list[str]) -> list[Distribution]:
    """Every distribution of this environment that ``requires`` reaches, markers evaluated
    (each requirement's extras followed, no others)."""
    found: dict[str, Distribution] = {}
    followed: dict[str, set[str]] = {}  # distribution -> the extras whose requirements are queued
    pending = [(Requirement(line), "") for line in requires]
    while pending:
        req, extra = pending.pop()
        if req.marker and not req.marker.evaluate({"extra": extra}):
            continue
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            pytest.fail(f"{req.name} is required by the wheel but not installed here")
        name = canonicalize_name(dist.metadata["Name"])
        found[name] = dist
        for extra_name in {"", *req.extras} - followed.get(name, set()):
            followed.setdefault(name, set()).add(extra_name)
            pending += [(Requirement(line), extra_name) for line in dist.requires or []]
    return list(found.values())


def _dependencies_dir(wheel: Path, target: Path) -> Path:
    """A site directory of links to the files of the distributions the wheel requires."""
    target.mkdir()
    site_packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    for dist in _closure(_requires(wheel)):
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            link = target / top
            if not link.exists() and (site_packages / top).exists():
                link.symlink_to(site_packages / top)
    return target


def test_a_wheel_in_a_fresh_venv_builds_every_view(tmp_path: Path):
    mirror = small_mirror(tmp_path / "mirror")
    # The sources a build reads, copied: setuptools builds in the source tree.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(PROJECT / name, source / name)
    for name in ("liger_warehouse", "pipelines", "sql"):
        shutil.copytree(PROJECT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", dist, source, cwd=tmp_path)
    (wheel,) = dist.glob("liger_warehouse-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        prefix = "liger_warehouse/sql/"
        shipped = {n.removeprefix(prefix) for n in archive.namelist() if n.startswith(prefix)}
    # every subfolder: macros/, views/, derived/
    assert {p.relative_to(SQL).as_posix() for p in SQL.glob("*/*.sql")} <= shipped

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    _run(*pip, "install", "--quiet", "--no-deps", "--no-compile", wheel, cwd=tmp_path)
    deps = _dependencies_dir(wheel, tmp_path / "dependencies")
    venv_site = Path(_run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                          cwd=tmp_path).strip())  # fmt: skip
    (venv_site / "wheel_dependencies.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    _run(*pip, "check", cwd=tmp_path)  # every requirement of every installed distribution is met

    # Away from the repository, with nothing of it on the path: only the installed wheel.
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "DAGSTER_", "LIGER_WAREHOUSE_"))}
    env.update(DAGSTER_HOME=str(tmp_path / "dagster_home"), LIGER_WAREHOUSE_CACHE_DIR=str(tmp_path / "cache"))
    where = _run(venv / "bin" / "python", "-c", "import liger_warehouse.sql as s; print(s.__file__)", cwd=away, env=env)
    assert Path(where.strip()).is_relative_to(venv), where
    # Only what the wheel requires is there: the suite's own tools are not.
    dev_only = "import importlib.util as u; print([m for m in ('pytest', 'moto') if u.find_spec(m)])"
    assert _run(venv / "bin" / "python", "-c", dev_only, cwd=away, env=env).strip() == "[]"

    root = tmp_path / "warehouse"
    said = _run(venv / "bin" / "liger-warehouse", "refresh", "-w", root, "--upstream", mirror, cwd=away, env=env)
    assert "No dagster instance configuration file" not in said and "Telemetry" not in said, said
    with open_views(root / "catalog.sqlite") as con:
        tables, views, macros = _catalog(con)
        assert con.execute("select count(*) from regressions").fetchone()[0] > 0
    defined = _defined()
    assert defined["view"] and defined["macro"]
    assert set(STORED) | {p.stem for p in SQL.glob("derived/*.sql")} <= tables
    assert defined["view"] <= views
    assert defined["macro"] <= macros


def _catalog(con: duckdb.DuckDBPyConnection) -> tuple[set[str], set[str], set[str]]:
    """The tables, views and macros the lake's catalog holds, as any DuckDB client lists them."""
    tables = {
        t for (t,) in con.execute("select table_name from duckdb_tables() where database_name = 'liger'").fetchall()
    }
    views = {v for (v,) in con.execute("select view_name from duckdb_views() where database_name = 'liger'").fetchall()}
    macros = {
        m
        for (m,) in con.execute(
            "select function_name from duckdb_functions() where database_name = 'liger' "
            "and function_type in ('macro', 'table_macro')"
        ).fetchall()
    }
    return tables, views, macros


def test_a_missing_sql_directory_is_an_error_not_a_lake_without_views(tmp_path: Path):
    empty = tmp_path / "sql"
    empty.mkdir()
    with open_lake(Lake.of(str(tmp_path / "warehouse"))) as con:
        with pytest.raises(MissingViews, match=r"no analytic views \(\*\.sql\) in .*sql: this installation lacks sql/"):
            create_sql_objects(con, sql_dir=empty)
        assert _catalog(con)[1:] == (set(), set())  # nothing created before the error
