"""An upgrade that changes ``sql/`` reaches an existing warehouse on its next refresh, even when
upstream holds nothing new.

The old warehouse is built by the code of the commit before the last change to ``sql/``, taken
from git (``git archive``) and run in a subprocess, as tests/test_schema_migration.py builds its
schema-1 warehouse. Then the installed ``liger-warehouse refresh`` of today's code, with
upstream unchanged, must not say "nothing new": it publishes a generation with the same facts and
every derived table derived by today's SQL: the same rows a build from scratch by today's code
derives. The refresh after it finds nothing new again.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from liger_warehouse.analysis import model_rows
from liger_warehouse.analysis.model_rows import derivation_version, in_order, model_inputs
from liger_warehouse.analysis.part_inputs import derived_current
from liger_warehouse.model.tables import INGESTED, SQL_MODELS
from liger_warehouse.serve.database import SQL_DIR, build_database, sql_version, views_current
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.storage import Storage
from tests.conftest import refresh
from tests.old_code import BUILD, extract, git
from tests.reliability.published import cli_env, cli_script, dagster_home
from tests.tiny_mirror import row, write_mirror

pytestmark = pytest.mark.slow


def derivation_inputs() -> list[str]:
    """The files of ``sql/`` that derived rows depend on: the models and the macros and views
    they read (``derivation_version``); the rest can change without deriving anything again."""
    return ["sql/derived", *(f"sql/{file.label(SQL_DIR)}" for file in model_inputs())]


@pytest.fixture(scope="module")
def old_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project as it was just before the SQL its derived tables depend on last changed."""
    last = git("log", "-1", "--no-merges", "--format=%H", "--", *derivation_inputs()).decode().strip()
    code = extract(f"{last}^", tmp_path_factory.mktemp("old-code"))
    if not (code / "liger_warehouse" / "cli").is_dir() or not (code / "sql" / "__init__.py").is_file():
        pytest.skip("the commit before the last SQL change has another package layout")
    # Installed, liger_warehouse.sql is today's top-level sql/ (setup.py): the old package reads its own.
    (code / "liger_warehouse" / "sql").symlink_to("../sql")
    return code


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight runs of two kernels, Liger and torch, speed moving a few percent between runs."""
    rng = random.Random(7)
    runs = {}
    for i in range(8):
        stamp = f"2026-02-{i + 1:02d} 01:00:00"
        runs[f"{i + 1:07x}"] = [
            row(provider, level * (1 + rng.gauss(0, 0.03)), "1.0.0", stamp, kernel=kernel, hidden=hidden)
            for kernel in ("rms_norm", "swiglu")
            for provider, level in (("liger", 1.0), ("torch", 2.0))
            for hidden in (1024, 2048, 4096)
        ]
    return write_mirror(tmp_path_factory.mktemp("mirror"), [runs["0000001"]], runs)


def _refresh(root: Path, mirror: Path, home: Path) -> str:
    done = subprocess.run(
        [*cli_script(), "refresh", "-w", str(root), "--upstream", str(mirror)],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout + done.stderr


def _parts(gens: GenerationStore, tables: tuple[str, ...]) -> dict[str, set[str]]:
    gen = gens.current()
    return {t: {p.file for p in gen.parts(t)} for t in tables}


def _rows(root: Path, table: str) -> pa.Table:
    gens = GenerationStore(Storage(str(root)))
    return in_order(table, gens.read_table(gens.current(), table))


def test_a_refresh_after_an_upgrade_derives_the_tables_again(old_code: Path, mirror: Path, tmp_path: Path):
    root = tmp_path / "warehouse"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIGER_WAREHOUSE")}
    env.update(PYTHONPATH=str(old_code), LIGER_WAREHOUSE_DIR=str(root), LIGER_WAREHOUSE_UPSTREAM=str(mirror),
               DAGSTER_HOME=str(dagster_home(tmp_path / "old-home")))  # fmt: skip
    built = subprocess.run([sys.executable, "-c", BUILD], cwd=old_code, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-4000:]
    gens = GenerationStore(Storage(str(root)))
    old = gens.current()
    assert not derived_current(old), "the old code's SQL should differ from today's"

    home = dagster_home(tmp_path / "home")
    said = _refresh(root, mirror, home)
    said = " ".join(said.split())  # the caption wraps at the table's width
    assert "nothing new upstream" not in said and "derived again: how they are derived (sql/, or a fix) changed" in said
    new = gens.current()
    assert new.id != old.id and new.parent == old.id and derived_current(new) and new.summary["rederived"]
    assert _parts(gens, INGESTED) == {t: {p.file for p in old.parts(t)} for t in INGESTED}

    # The rows a build from scratch by today's code derives (a run's part is named after the
    # fact_result parts it reads, whose names differ between two warehouses).
    scratch = tmp_path / "scratch"
    _refresh(scratch, mirror, dagster_home(tmp_path / "scratch-home"))
    for table in SQL_MODELS:
        assert _rows(root, table).equals(_rows(scratch, table)), table

    again = _refresh(root, mirror, home)
    assert "nothing new upstream" in again and gens.current().id == new.id


def test_sql_no_derived_table_reads_changes_the_views_alone(mirror: Path, tmp_path: Path):
    """An upgrade that changes only a view people query (here ``regressions``, which no derived
    table reads) rebuilds liger.duckdb on the next refresh, with no generation staged and nothing
    derived again."""
    root, home = tmp_path / "warehouse", dagster_home(tmp_path / "home")
    _refresh(root, mirror, home)
    gens = GenerationStore(Storage(str(root)))
    published = gens.current()
    older = tmp_path / "older-sql"
    shutil.copytree(SQL_DIR, older)
    view = older / "views" / "regressions.sql"
    view.write_text(view.read_text() + "\n-- as an older release wrote it\n")
    assert derivation_version(older) == derivation_version() and sql_version(older) != sql_version()
    build_database(gens, published, root / "liger.duckdb", sql_dir=older)
    assert not views_current(gens.storage, root / "liger.duckdb", published.id)

    said = _refresh(root, mirror, home)
    assert "views rebuilt" in said and "nothing new upstream" in said, said
    assert gens.current().id == published.id and views_current(gens.storage, root / "liger.duckdb", published.id)
    assert "nothing new upstream" in _refresh(root, mirror, home)


def test_sql_a_derived_table_reads_through_a_view_changes_the_derivation():
    """A macro a model reads (``verdict_rule``) is a derivation input; a view none reads is not."""
    assert "sql/macros/verdict_rule.sql" in derivation_inputs()
    assert "sql/views/regressions.sql" not in derivation_inputs()


# The derived tables whose parts are named by what their rows are derived from (a source's or a
# run's inputs and the derivation version), not by the rows.
NAMED_BY_INPUTS = (
    *("fact_build_source", "fact_run_point", "fact_speedup_pair", "fact_restatement"),
    *("fact_run_step", "fact_recent_point", "fact_speedup_step"),
)


@pytest.fixture
def next_derivation_revision(monkeypatch: pytest.MonkeyPatch):
    """This code with ``DERIVATION_REVISION`` raised, as the release after a fix to what a part's
    name stands for would have it (the version is cached: cleared on the way in and out)."""
    monkeypatch.setattr(model_rows, "DERIVATION_REVISION", model_rows.DERIVATION_REVISION + 1)
    derivation_version.cache_clear()
    yield
    derivation_version.cache_clear()


def test_a_raised_derivation_revision_derives_every_table_again(mirror: Path, tmp_path: Path, request):
    """A fix that changes the rows a derived part's name stands for, with the SQL unchanged, raises
    ``DERIVATION_REVISION``: the next refresh derives every derived table again into new files,
    even with nothing new upstream, rather than carrying (or reusing by name) a part the old code
    derived. Here the old parts were right, so the rows are the same."""
    root = tmp_path / "warehouse"
    _refresh(root, mirror, dagster_home(tmp_path / "home"))
    gens = GenerationStore(Storage(str(root)))
    old = gens.current()
    before = {table: _rows(root, table) for table in SQL_MODELS}

    request.getfixturevalue("next_derivation_revision")
    assert not derived_current(old)
    assert refresh(root, upstream=str(mirror)).result.success
    new = gens.current()
    assert new.parent == old.id and derived_current(new) and new.summary["rederived"]
    assert _parts(gens, INGESTED) == {t: {p.file for p in old.parts(t)} for t in INGESTED}
    for table in NAMED_BY_INPUTS:  # the others are named by their rows, right whoever wrote them
        assert not {p.file for p in new.parts(table)} & {p.file for p in old.parts(table)}, table
    for table in SQL_MODELS:
        assert _rows(root, table).equals(before[table]), table
