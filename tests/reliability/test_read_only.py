"""Read-only means read-only, and a warehouse answers from its own files wherever it is copied.

Every command that reads is run against a copy of the base warehouse, and every byte of it is
hashed before and after: none may change and no file may appear, in the warehouse or in the
directory the hostile SQL aims at. ``liger-warehouse sql`` gets every kind of statement that is
not a query, in one-shot mode and at the interactive prompt: each is refused with one line
before it runs. Queries that try to read outside the warehouse fail on the locked-down
connection unless ``--allow-read`` names the path.

Then a warehouse is copied, the original made to hold different bytes under the same file names,
then moved away and deleted: the copy answers with its own data through ``liger-warehouse`` and
through a plain DuckDB client that attaches the copy's catalog with the copy's data path.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from tests.plain_duckdb import open_views
from tests.reliability.published import cli_env, cli_script, dagster_home, tree

# Statements that are not queries: name -> SQL ({root}: the warehouse, {part}: one of its
# fact_result data files, {outside}: an empty directory beside it).
NOT_QUERIES = {
    "copy-over-a-part": "copy (select 1 as a) to '{root}/{part}' (format parquet)",
    "copy-over-the-catalog": "copy (select 'x' as a) to '{root}/catalog.sqlite' (format csv, header false)",
    "copy-to-a-new-file": "copy (select 1 as a) to '{outside}/new.csv'",
    "copy-after-a-query": "select 1; copy (select 1 as a) to '{root}/after.csv'",
    "copy-behind-a-comment": "/* only a query */ copy (select 1 as a) to '{root}/commented.csv'",
    "explain-analyze-copy": "explain analyze copy (select 1 as a) to '{root}/explained.csv'",
    "export-database": "export database '{outside}/exported'",
    "attach-a-new-database": "attach '{outside}/new.duckdb' as other",
    "attach-the-catalog-writable": "attach 'ducklake:sqlite:{root}/catalog.sqlite' as writable",
    "install-an-extension": "install httpfs",
    "load-an-extension": "load httpfs",
    "create-a-table": "create table t as select 1 as a",
    "create-a-temp-view": "create temp view v as select 1 as a",
    "drop-a-view": "drop view fact_result",
    "checkpoint": "checkpoint",
    "set-enable-external-access": "set enable_external_access = true",
    "reset-allowed-directories": "reset allowed_directories",
    "set-file-search-path": "set file_search_path = '{outside}'",
    "set-lock-configuration": "set lock_configuration = false",
    "set-log-query-path": "set log_query_path = '{outside}/queries.log'",
    "pragma-profiling-output": "pragma profiling_output = '{outside}/profile.json'",
    "call-a-table-function": "call force_checkpoint()",
}
# Queries that read a file outside the warehouse: name -> SQL ({secret}: a file beside it).
OUTSIDE_READS = {
    "read-text-etc-passwd": "select content from read_text('/etc/passwd')",
    "read-csv-etc-passwd": "select * from read_csv('/etc/passwd')",
    "glob-etc": "select * from glob('/etc/*')",
    "read-text-dot-dot": "select content from read_text('{root}/../secret.txt')",
    "read-text-relative": "select content from read_text('../secret.txt')",
    "read-another-warehouse": "select count(*) from read_parquet('{secret_dir}/*.parquet')",
    "set-variable-from-a-file": "set variable leaked = (select content from read_text('{secret}'))",
    "query-function-copy": "select * from query('copy (select 1 as a) to ''{root}/q.csv''')",
}


# The report's one cache: liger-warehouse/js/<bundle>.
VEGA_CACHE = Path("liger-warehouse/js")


def _fingerprint(root: Path) -> dict[str, tuple[int, int, str]]:
    """Size, mtime and SHA-256 of every file under ``root``: any change, touch or new file shows."""
    return tree(root)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def site(base_copy: Path, tmp_path: Path, monkeypatch) -> dict[str, str]:
    """A warehouse copy, an empty directory beside it and a secret file beside it."""
    monkeypatch.setenv("LIGER_WAREHOUSE_DIR", str(base_copy))  # restored after; -w changes it too
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "secret.txt").write_text("not the warehouse's\n")
    secret_dir = tmp_path / "secret_dir"
    secret_dir.mkdir()
    pq.write_table(pq.read_table(base_copy / _a_part(base_copy)), secret_dir / "other.parquet")
    return {
        "root": str(base_copy),
        "part": _a_part(base_copy),
        "outside": str(outside),
        "secret": str(tmp_path / "secret.txt"),
        "secret_dir": str(secret_dir),
    }


def _parts(root: Path) -> list[Path]:
    """The data files of fact_result in the newest snapshot of ``root``'s lake."""
    with open_views(root / "catalog.sqlite") as con:
        files = con.execute("select data_file from ducklake_list_files('liger', 'fact_result')").fetchall()
    return [Path(f) for (f,) in files]


def _a_part(root: Path) -> str:
    return str(_parts(root)[0].relative_to(root))


def _sql(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["sql", *args], input=stdin)


@pytest.mark.parametrize("name", NOT_QUERIES)
def test_a_statement_that_is_not_a_query_is_refused_in_one_line(site, name):
    root, outside = Path(site["root"]), Path(site["outside"])
    before = _fingerprint(root)
    done = _sql("-w", str(root), NOT_QUERIES[name].format(**site))
    assert done.exit_code == 1, done.output
    # The CLI's error format: what failed, then what to do.
    what, hint = _lines(done.output)
    assert what.startswith("error: ") and "is not a query" in what, done.output
    assert "only queries run here" in hint
    assert _fingerprint(root) == before
    assert list(outside.iterdir()) == []


def test_the_prompt_refuses_each_in_one_line_and_goes_on(site):
    root, outside = Path(site["root"]), Path(site["outside"])
    before = _fingerprint(root)
    script = [sql.format(**site) for sql in NOT_QUERIES.values() if "\n" not in sql]
    done = _sql("-w", str(root), stdin="\n".join([*script, "select 6 * 7 as answer", ""]))
    assert done.exit_code == 0, done.output
    assert len(_lines(done.stderr)) == len(script), done.stderr
    assert all("is not a query" in line for line in _lines(done.stderr))
    assert "42" in done.stdout
    assert _fingerprint(root) == before
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("name", OUTSIDE_READS)
def test_a_query_cannot_read_outside_the_warehouse(site, name):
    root = Path(site["root"])
    before = _fingerprint(root)
    done = _sql("-w", str(root), "--format", "csv", OUTSIDE_READS[name].format(**site))
    assert done.exit_code == 1, done.output
    what, hint = _lines(done.output)  # what failed, then what to do
    assert what.startswith("error: ") and ("--allow-read" in hint or "fix the query" in hint), done.output
    assert "root:" not in done.output and "not the warehouse's" not in done.output  # nothing read
    assert _fingerprint(root) == before


def test_allow_read_opens_a_path_to_reading_only(site):
    root, outside = Path(site["root"]), Path(site["outside"])
    before = _fingerprint(root)
    query = f"select content from read_text('{site['secret']}')"
    done = _sql("-w", str(root), "--format", "csv", "--allow-read", site["secret"], query)
    assert done.exit_code == 0, done.output
    assert "not the warehouse's" in done.stdout
    folder = f"select count(*) as n from read_parquet('{site['secret_dir']}/*.parquet')"
    done = _sql("-w", str(root), "--format", "csv", "--allow-read", site["secret_dir"], folder)
    assert done.exit_code == 0 and _lines(done.stdout)[0] == "n", done.output
    # A readable directory is still not a writable one.
    copy = f"copy (select 1 as a) to '{outside}/x.csv'"
    refused = _sql("-w", str(root), "--allow-read", str(outside), copy)
    assert refused.exit_code == 1 and "is not a query" in refused.output
    assert list(outside.iterdir()) == []
    assert _fingerprint(root) == before


def test_session_variables_and_the_memory_limit_still_work(site):
    root = Path(site["root"])
    before = _fingerprint(root)
    one_shot = _sql(
        "-w", str(root), "--format", "csv",
        "set variable regression_threshold = 0.10; set memory_limit = '2GB'; "
        "select regression_threshold() as t, current_setting('memory_limit') as m",
    )  # fmt: skip
    assert one_shot.exit_code == 0, one_shot.output
    assert _lines(one_shot.stdout)[1].startswith("0.1,1.8 GiB"), one_shot.stdout
    prompt = _sql("-w", str(root), stdin="set variable regression_threshold = 0.25\nselect regression_threshold()\n")
    assert prompt.exit_code == 0 and prompt.stderr == "", prompt.output
    assert "0.25" in prompt.stdout
    assert _fingerprint(root) == before


def test_no_reading_command_changes_or_creates_a_file(site, tmp_path):
    """regressions, versions, status, export and report, as an operator runs them."""
    root = Path(site["root"])
    versions = [v for (v,) in _query(root, "select liger_version from dim_version order by version_rank")]
    out = tmp_path / "out"
    commands = [
        ["sql", "select count(*) from regressions"],
        ["regressions", "--base", versions[0], "--head", versions[-1], "--verdict", "all"],
        ["versions"],
        ["status"],
        ["export", "kernelindex", "--out", str(out / "kernelindex")],
        ["export", "kernelindex", "--out", str(out / "where"), "--where", "kernel is not null"],
        ["export", "liger-csv", "--path", "benchmark/data/all_benchmark_data.csv", "--out", str(out / "old.csv")],
        ["report", "--out", str(out / "report"), "--no-png"],
    ]
    # Nor in the local cache: DuckDB makes its spill folder only if a query spills. The report
    # alone keeps one file there, the Vega bundle it would otherwise rebuild on every run.
    cache = tmp_path / "xdg-cache"
    env = cli_env(dagster_home(tmp_path / "dagster"), XDG_CACHE_HOME=str(cache))
    env.pop("LIGER_WAREHOUSE_CACHE_DIR", None)
    before = _fingerprint(root)
    for command in commands:
        done = subprocess.run(
            [*cli_script(), *command, "--warehouse", str(root)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert _fingerprint(root) == before, command
        made = {p.relative_to(cache) for p in cache.rglob("*")} if cache.exists() else set()
        assert all(command[0] == "report" and (VEGA_CACHE in (p, p.parent) or p in VEGA_CACHE.parents) for p in made), (
            command,
            made,
        )


def _query(root: Path, sql: str) -> list[tuple]:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute(sql).fetchall()


# -- a copied or moved warehouse ----------------------------------------------------------------

# name -> what happens to the original after the copy
MOVED = ("original-diverged", "original-moved", "original-deleted")


def _diverge(root: Path) -> None:
    """Rewrite every fact_result data file of ``root`` in place with its first row only: a
    reader of these files sees one row per file where the copy has them all."""
    for path in _parts(root):
        pq.write_table(pq.read_table(path).slice(0, 1), path)


def _apply(name: str, original: Path) -> None:
    if name == "original-diverged":
        _diverge(original)
    elif name == "original-moved":
        original.rename(original.with_name("moved-away"))
    else:
        shutil.rmtree(original)


@pytest.fixture
def copied(base_copy: Path, tmp_path: Path, monkeypatch) -> tuple[Path, Path, int]:
    """The original, its copy (``cp -r``) and the results the copy holds."""
    monkeypatch.setenv("LIGER_WAREHOUSE_DIR", str(base_copy))
    backup = tmp_path / "backup"
    shutil.copytree(base_copy, backup)
    ((results,),) = _query(backup, "select count(*) from fact_result")
    return base_copy, backup, results


@pytest.mark.parametrize("name", MOVED)
def test_a_copy_answers_from_its_own_files_through_liger_warehouse(copied, name):
    original, backup, results = copied
    _apply(name, original)
    before = _fingerprint(backup)
    done = _sql("-w", str(backup), "--format", "csv", "select count(*) as n from fact_result")
    assert done.exit_code == 0, done.output
    assert _lines(done.stdout) == ["n", str(results)]
    assert _fingerprint(backup) == before


@pytest.mark.parametrize("name", MOVED)
def test_a_plain_duckdb_client_on_a_copy_reads_the_copy(copied, name):
    """ATTACH of the copy's catalog with the copy's data path (tests/plain_duckdb.py)."""
    original, backup, results = copied
    _apply(name, original)
    before = _fingerprint(backup)
    assert _query(backup, "select count(*) from fact_result") == [(results,)]
    assert _fingerprint(backup) == before
