"""Reading the lake: the standalone DuckDB CLI, several readers at once (a writer too), a lake
moved by --catalog and --data, and the ``liger-warehouse sql | regressions | versions`` commands."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.lake import extensions
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from tests import expected
from tests.conftest import MIRROR
from tests.plain_duckdb import open_views

H100 = "NVIDIA H100 80GB HBM3"
PROJECT = Path(__file__).resolve().parents[1]


def duckdb_cli() -> str:
    """The ``duckdb`` binary of the ``duckdb-cli`` dev dependency, beside this interpreter."""
    found = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
    assert found, "the duckdb CLI is missing: pip install -e '.[dev]' installs duckdb-cli"
    return found


@pytest.fixture(scope="module")
def mirror() -> expected.Mirror:
    return expected.read_mirror(MIRROR)


def _invoker(root: Path, monkeypatch: pytest.MonkeyPatch):
    """Invoke the app against the warehouse at ``root``; the env var is restored afterwards."""
    monkeypatch.setenv("LIGER_WAREHOUSE_DIR", str(root))
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None):
        return runner.invoke(app, list(args), input=stdin, catch_exceptions=False)

    return invoke


@pytest.fixture
def cli(mirror_warehouse, monkeypatch):
    return _invoker(mirror_warehouse.root, monkeypatch)


@pytest.fixture
def full_cli(full_mirror_warehouse, monkeypatch):
    """For answers about what only the whole snapshot holds (0.6.3's release run, an H100 NVL)."""
    return _invoker(full_mirror_warehouse.root, monkeypatch)


def _attach(catalog: str) -> str:
    """README's lines for any DuckDB client: the extensions (here from their pip packages, as on a
    machine without an extension repository), then the lake attached read-only."""
    loads = "".join(f"load '{extensions.packaged(name)}'; " for name in ("ducklake", "sqlite_scanner"))
    return f"{loads}attach 'ducklake:sqlite:{catalog}' as liger (read_only); use liger;"


def test_standalone_duckdb_cli_attaches_the_lake_and_runs_views(mirror_warehouse, mirror):
    binary = duckdb_cli()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("v1."), version
    script = """
        select count(*) as current from current_results;
        set variable regression_threshold = 0.10;
        select count(*) filter (where verdict = 'regression') as regressions from compare_versions('0.6.3', '0.7.0');
    """
    # README's ATTACH, from the directory that holds the warehouse: the catalog knows where its data is.
    root = mirror_warehouse.root
    done = subprocess.run(
        [binary, "-csv", "-cmd", _attach(f"{root.name}/catalog.sqlite")],
        input=script, capture_output=True, text=True, cwd=root.parent, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_views(mirror_warehouse.database) as con:
        (at_ten,) = con.execute(
            "select count(*) filter (where verdict = 'regression') from compare_versions('0.6.3', '0.7.0', 0.10)"
        ).fetchone()
    assert done.stdout.split() == ["current", str(len(mirror.current())), "regressions", str(at_ten)]


def test_several_processes_read_at_once_while_a_refresh_writes(mirror_warehouse, tmp_path):
    """Readers never block each other, and a writer's open transaction (a refresh before its
    commit) blocks none of them: they read the last committed snapshot."""
    root = tmp_path / "warehouse"
    shutil.copytree(mirror_warehouse.root, root)
    catalog, sql = str(root / "catalog.sqlite"), "select count(*) from speedups"
    # No progress bar on stdout when a loaded machine makes the query slow: only the count.
    python = [sys.executable, "-c", f"from tests.plain_duckdb import open_views; from pathlib import Path; "
              f"con = open_views(Path({catalog!r})); con.execute('set enable_progress_bar = false'); "
              f"print(con.execute({sql!r}).fetchall()[0][0])"]  # fmt: skip
    cli = [duckdb_cli(), "-noheader", "-csv", "-cmd", _attach(catalog), "-c", sql]
    commands = [cli] * 2 + [python] * 2
    with open_views(root / "catalog.sqlite") as held, open_lake(Lake.of(str(root))) as writer:
        want = held.execute(sql).fetchall()[0][0]
        writer.execute("begin")
        writer.execute("create or replace table dim_build as select * from dim_build where false")
        running = [
            subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT)
            for c in commands
        ]
        outputs = [p.communicate(timeout=120) for p in running]
        writer.execute("rollback")
    assert [p.returncode for p in running] == [0] * len(commands), outputs
    assert [out.strip() for out, _ in outputs] == [str(want)] * len(commands)


def test_the_lake_moves_with_catalog_and_data(mirror_warehouse, mirror, tmp_path, monkeypatch):
    """--catalog and --data name a lake anywhere: a copy whose data moved reads its own files."""
    catalog, data = tmp_path / "elsewhere" / "lake.sqlite", tmp_path / "files"
    catalog.parent.mkdir()
    shutil.copyfile(mirror_warehouse.database, catalog)
    shutil.copytree(mirror_warehouse.root / "lake", data)
    invoke = _invoker(tmp_path / "no-warehouse-here", monkeypatch)
    query = "select count(*) as n from current_results"
    done = invoke("sql", query, "-f", "csv", "--catalog", f"sqlite:{catalog}", "--data", str(data))
    assert done.exit_code == 0, done.stderr
    assert done.stdout.split() == ["n", str(len(mirror.current()))]
    shutil.rmtree(data)  # the original's files are still there: a reader of the copy must not use them
    done = invoke("sql", query, "--catalog", f"sqlite:{catalog}", "--data", str(data))
    assert done.exit_code == 1 and str(data) in " ".join(done.stderr.split())
    assert not (tmp_path / "no-warehouse-here").exists()


def test_sql_runs_one_query(cli, mirror):
    done = cli("sql", "select count(*) as n from current_results", "--format", "csv")
    assert done.exit_code == 0
    assert done.stdout.split() == ["n", str(len(mirror.current()))]
    table = cli("sql", "select 6 * 7 as answer")
    assert "answer" in table.stdout and "42" in table.stdout


def test_sql_without_a_query_is_an_interactive_prompt(cli):
    done = cli("sql", stdin="select 6 * 7 as answer\nselect * from no_such_view\nselect 'still here' as s\n")
    assert done.exit_code == 0
    assert "42" in done.stdout and "still here" in done.stdout
    assert "no_such_view" in done.stderr


H100_FAMILY = ["NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H100 PCIe"]


def _macro_rows(warehouse, sql: str, params: list) -> list[dict]:
    """What the macro itself answers: the CLI only filters, orders and formats it."""
    with open_views(warehouse.database) as con:
        cursor = con.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _key(r: dict) -> tuple:
    return (r["series_digest"], r["verdict"], float(r["base_p50"]), float(r["head_p50"]))


@pytest.mark.parametrize(("threshold", "verdict"), [("5", "regression"), ("10", "improvement")])
def test_regressions_csv(full_cli, full_mirror_warehouse, threshold, verdict):
    done = full_cli("regressions", "--base", "0.6.3", "--head", "0.7.0", "--gpu", "H100",
                    "--threshold", threshold, "--verdict", verdict, "--format", "csv")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert f"GPUs matched: {', '.join(H100_FAMILY)}" in done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    want = _macro_rows(
        full_mirror_warehouse,
        "select * from compare_versions('0.6.3', '0.7.0', threshold := ?) where verdict = ? and list_contains(?, gpu)",
        [float(threshold) / 100, verdict, H100_FAMILY],
    )
    assert want and Counter(map(_key, rows)) == Counter(map(_key, want))
    assert {r["verdict"] for r in rows} == {verdict}


def test_regressions_json_for_one_kernel(full_cli, full_mirror_warehouse):
    done = full_cli("regressions", "--base", "v0.6.3", "--head", "0.7.0", "--kernel", "rms_norm", "--format", "json")
    assert done.exit_code == 0
    records = json.loads(done.stdout)
    want = _macro_rows(
        full_mirror_warehouse,
        "select * from compare_versions('0.6.3', '0.7.0') where verdict = 'regression' and kernel = 'rms_norm'",
        [],
    )
    assert len(records) == len(want) > 0
    assert Counter(map(_key, records)) == Counter(map(_key, want))
    assert all(r["base_version"] == "0.6.3" and r["head_version"] == "0.7.0" for r in records)
    assert all(r["base_sources"] == ["d5648bf-v0.6.3"] for r in records)


def test_regressions_between_two_runs(cli, mirror_warehouse):
    done = cli("regressions", "--base-run", "7644a0f-v0.7.0", "--head-run", "latest", "--verdict", "all",
               "--format", "json")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    records = json.loads(done.stdout)
    want = _macro_rows(mirror_warehouse, "select * from compare_runs('7644a0f-v0.7.0', '7644a0f')", [])
    assert len(records) == len(want) == 2484
    assert Counter(map(_key, records)) == Counter(map(_key, want))
    assert {(r["base"], r["head"]) for r in records} == {("7644a0f-v0.7.0", "7644a0f")}


def test_regressions_table_is_readable(full_cli):
    done = full_cli(
        "regressions", "--base", "0.6.3", "--head", "0.7.0", "--gpu", "sm_90", "--kernel", "tvd", "--verdict", "all"
    )
    assert done.exit_code == 0
    title = " ".join(done.stdout.split())
    assert "0.6.3 → 0.7.0 on sm_90 (NVIDIA H100 80GB HBM3, NVIDIA H100 NVL, NVIDIA H100 PCIe, NVIDIA H200)" in title
    assert "unchanged" in done.stdout and "adjusted_change" in done.stdout
    assert "0.8555 ms" in done.stdout and "+3.6%" in done.stdout and "±1.7%" in done.stdout  # tvd backward V=4096


def test_a_gpu_named_exactly_is_not_its_family(full_cli):
    # NVIDIA H100 NVL is in the whole snapshot's runs of 7644a0f, not in the cut's.
    done = full_cli("regressions", "--base-run", "7644a0f-v0.7.0", "--head-run", "7644a0f",
                    "--gpu", "nvidia h100 nvl", "--verdict", "all", "--format", "csv")  # fmt: skip
    assert done.exit_code == 0
    said = " ".join(done.stderr.split())  # rich wraps at the terminal width
    assert "no series has a result in both 7644a0f-v0.7.0 and 7644a0f on nvidia h100 nvl (NVIDIA H100 NVL)" in said
    family = full_cli("regressions", "--base-run", "7644a0f-v0.7.0", "--head-run", "7644a0f", "--gpu", "H100",
                      "--verdict", "all", "--format", "csv")  # fmt: skip
    assert family.stdout.count("\n") == 2484 + 1


def test_both_kinds_of_sides_or_neither(cli):
    done = cli("regressions", "--base", "0.6.3", "--head-run", "latest")
    assert done.exit_code == 2
    assert "give --base and --head (two versions) or --base-run and --head-run" in " ".join(done.stderr.split())


@pytest.mark.parametrize(
    ("args", "listed"),
    [
        (["--base", "0.9.9", "--head", "0.7.0"], "0.5.10"),
        (["--base", "0.6.3", "--head", "0.7.0'; drop view results; --"], "0.8.0"),
        (["--base", "0.6.3", "--head", "0.7.0", "--gpu", "MI300X"], H100),
        (["--base", "0.6.3", "--head", "0.7.0", "--gpu", "H100' or '1'='1"], "NVIDIA B200"),
        (["--base", "0.6.3", "--head", "0.7.0", "--kernel", "rmsnorm"], "did you mean rms_norm"),
        (["--base-run", "7644a0f", "--head-run", "nosuchrun"], "7644a0f, 7644a0f-v0.7.0"),
    ],
)
def test_unknown_values_list_what_exists(cli, args, listed):
    done = cli("regressions", *args)
    assert done.exit_code == 2
    assert "unknown" in done.stderr
    assert listed in " ".join(done.stderr.split())
    assert done.stdout == ""


def test_a_gpu_without_results_in_both_versions(full_cli):
    done = full_cli("regressions", "--base", "0.6.3", "--head", "0.7.0", "--gpu", "B200", "--format", "csv")
    assert done.exit_code == 0
    assert "no series has a result in both 0.6.3 and 0.7.0 on B200 (NVIDIA B200)" in done.stderr
    assert done.stdout.count("\n") == 1  # the header only


def test_versions_command(cli, mirror):
    done = cli("versions", "--format", "json")
    assert done.exit_code == 0
    listed = [v["liger_version"] for v in json.loads(done.stdout)]
    assert listed == expected.semantic_order({r.version for r in mirror.results()})
