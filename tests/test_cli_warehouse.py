"""``liger-warehouse``: complete --help, ``refresh`` with progress and its summary, ``status``."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import dagster as dg
import pytest
import typer
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.cli.progress_view import TASK_LABELS
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.store import last_refresh
from liger_warehouse.store.storage import Storage
from tests.conftest import env, require_mirror
from tests.plain_duckdb import open_views
from tests.reliability.published import cli_env, cli_script

runner = CliRunner()
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The progress bars' lines (liger_warehouse/cli/progress_view.py).
PROGRESS = ("stages:", *TASK_LABELS.values())  # the refresh's progress bars


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "160", "NO_COLOR": "1"})
    return result.exit_code, ANSI.sub("", result.output)


def _commands(command: click.Command, path: str = "liger-warehouse") -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, f"{path} {name}")


def test_help_is_complete():
    code, text = invoke("--help")
    assert code == 0
    for name in ("refresh", "status", "sql"):
        assert name in text
    for path, command in _commands(typer.main.get_command(app)):
        assert command.help, f"`{path}` has no help text"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"`{path}` option {param.opts} has no help text"
            else:
                assert getattr(param, "help", None), f"`{path}` argument {param.name} has no help text"


def test_refresh_and_status_help_say_what_they_print():
    _, text = invoke("refresh", "--help")
    assert "progress" in text and "summary" in text and "--upstream" in text
    _, text = invoke("status", "--help")
    assert "upstream head" in text and "--check-upstream" in text


@pytest.fixture
def dagster_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with env(DAGSTER_HOME=str(home), LIGER_WAREHOUSE_DIR=None, LIGER_WAREHOUSE_UPSTREAM=None):
        yield home


@pytest.fixture
def warehouse(mirror_warehouse, tmp_path: Path, dagster_home: Path) -> Path:
    root = tmp_path / "warehouse"
    shutil.copytree(mirror_warehouse.root, root)
    return root


def _snapshots(root: Path) -> list[tuple[int, dict]]:
    """Each snapshot of the lake at ``root`` that a refresh committed, oldest first, with its summary."""
    with open_views(root / "catalog.sqlite") as con:
        rows = con.execute(
            "select snapshot_id, commit_extra_info from ducklake_snapshots('liger') "
            "where commit_extra_info is not null order by snapshot_id"
        ).fetchall()
    return [(snapshot, json.loads(summary)) for snapshot, summary in rows]


def _mirror_with_one_more_commit(tmp_path: Path) -> Path:
    """A copy of the mirror whose all_benchmark_data.csv has one more commit, one row re-measured."""
    mirror = tmp_path / "mirror"
    shutil.copytree(require_mirror(), mirror)
    listing = mirror / "commits" / "all_benchmark_data.json"
    commits = json.loads(listing.read_text())
    head = commits[0]["sha"]
    lines = gzip.decompress((mirror / "raw" / head / "benchmark/data/all_benchmark_data.csv.gz").read_bytes())
    lines = lines.split(b"\r\n")
    fields = lines[1].split(b",")
    fields[8:11] = [b"9.999", b"9.5", b"10.5"]
    lines[1] = b",".join(fields)
    sha = "e" * 40
    target = mirror / "raw" / sha / "benchmark/data/all_benchmark_data.csv.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(b"\r\n".join(lines)))
    listing.write_text(json.dumps([{**commits[0], "sha": sha, "html_url": f"https://example.test/{sha}"}, *commits]))
    return mirror


def test_refresh_shows_progress_and_a_summary(warehouse: Path, tmp_path: Path):
    mirror = _mirror_with_one_more_commit(tmp_path)
    code, text = invoke("refresh", "-w", str(warehouse), "--upstream", str(mirror))
    assert code == 0, text
    assert "stages: done" in text and all(label in text for label in TASK_LABELS.values()), text
    snapshot, summary = _snapshots(warehouse)[-1]
    assert summary["revisions_ingested"] == 1 and f"published snapshot {snapshot}" in text
    for column in ("revisions ingested", "results added", "restated", "removed", "time"):
        assert column in text
    row = re.search(r"│\s*1\s*│\s*1\s*│\s*1\s*│\s*0\s*│\s*[\d.]+s\s*│", text)
    assert row, text


def test_refresh_with_nothing_new_says_so_in_one_line(warehouse: Path, dagster_home: Path):
    """Nothing new upstream: nothing is ingested, audited or published, and the installed CLI
    prints one line; no warning about a blocking check that "emitted no result" (Dagster logs
    it to stderr, so this runs the CLI as a process). Its listing showed upstream as published,
    so no run was launched: the instance records the listing as upstream_snapshots
    materialized without a run, and `status` names it as the last refresh."""
    before = _snapshots(warehouse)
    done = subprocess.run(
        [*cli_script(), "refresh", "-w", str(warehouse), "--upstream", str(require_mirror())],
        env=cli_env(dagster_home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    text = done.stdout + done.stderr
    assert done.returncode == 0, text
    assert _snapshots(warehouse) == before, text
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("stages: done")]
    said = rf"nothing new upstream: snapshot {before[-1][0]} stays current \([\d.]+s\)"
    assert len(lines) == 1 and re.fullmatch(said, lines[0]), text
    with dg.DagsterInstance.get() as instance:
        assert not instance.get_run_records(dg.RunsFilter(job_name="refresh"))
        event = instance.get_latest_materialization_event(dg.AssetKey("upstream_snapshots"))
    assert event.run_id == "" and event.asset_materialization.metadata["revisions_listed"].value > 0
    code, text = invoke("status", "-w", str(warehouse))
    assert code == 0 and re.search(r"last refresh: [\d-]+ [\d:]+ UTC, nothing new upstream \(no run needed\)", text)


def test_a_refresh_that_loses_to_another_writer_says_so_in_one_line(
    warehouse: Path, tmp_path: Path, dagster_home: Path
):
    """Another writer's transaction is open on the catalog (another refresh, about to commit)
    longer than the refresh's commit waits: it commits nothing, says why in one line and exits
    1; the lake stays as it was. The installed CLI, as a process: its end releases what its
    failed commit held."""
    mirror = _mirror_with_one_more_commit(tmp_path)
    before = _snapshots(warehouse)
    with open_lake(Lake.of(str(warehouse))) as other:
        other.execute("begin")
        other.execute("create or replace table dim_build as select * from dim_build")
        done = subprocess.run(
            [*cli_script(), "refresh", "-w", str(warehouse), "--upstream", str(mirror)],
            env=cli_env(dagster_home, LIGER_WAREHOUSE_COMMIT_WAIT_SECONDS="2"), capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        other.execute("rollback")
    text = ANSI.sub("", done.stdout + done.stderr)
    assert done.returncode == 1, text
    said = [line for line in text.splitlines() if line.strip() and not line.startswith(PROGRESS)]
    assert len(said) == 1 and said[0].startswith("error: ") and "nothing was published" in said[0], text
    assert "the catalog stayed locked" in said[0] and "LIGER_WAREHOUSE_COMMIT_WAIT_SECONDS" in said[0], text
    assert _snapshots(warehouse) == before


def _count(root: Path, as_of: str | None = None) -> str:
    """``select count(*) from fact_result`` through ``sql`` (at snapshot ``as_of``): its CSV value."""
    code, text = invoke("sql", "-w", str(root), "-f", "csv", "select count(*) as n from fact_result",
                        *(["--as-of", as_of] if as_of else []))  # fmt: skip
    assert code == 0, text
    return text.split()[-1]


def test_sql_as_of_reads_an_earlier_snapshot(warehouse: Path, tmp_path: Path):
    with open_views(warehouse / "catalog.sqlite") as con:
        (held,) = con.execute("select count(*) from fact_result").fetchone()
        (committed,) = con.execute("select max(snapshot_time)::varchar from ducklake_snapshots('liger')").fetchone()
    assert invoke("refresh", "-w", str(warehouse), "--upstream", str(_mirror_with_one_more_commit(tmp_path)))[0] == 0
    (first, _), (second, summary) = _snapshots(warehouse)
    assert summary["results_added"] == 1
    assert _count(warehouse) == _count(warehouse, str(second)) == str(held + 1)
    assert _count(warehouse, str(first)) == _count(warehouse, committed) == str(held)
    code, text = invoke("sql", "-w", str(warehouse), "--as-of", "99", "select 1")
    lines = [line for line in text.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: --as-of 99: ") and "99" in lines[0], text
    assert f"snapshots 0 to {second}" in lines[0], text


def test_status_lists_snapshots_last_refresh_rows_and_upstream_head(warehouse: Path, tmp_path: Path):
    mirror = _mirror_with_one_more_commit(tmp_path)
    code, _ = invoke("refresh", "-w", str(warehouse), "--upstream", str(mirror))
    assert code == 0
    (first, whole), (second, one) = _snapshots(warehouse)
    code, text = invoke("status", "-w", str(warehouse))
    assert code == 0, text
    for snapshot, summary in ((second, one), (first, whole)):
        did = f"{summary['revisions_ingested']} revisions, +{summary['results_added']} results"
        assert re.search(rf"│\s*{snapshot}\s*│[^│]*│\s*refresh\s*│\s*{re.escape(did)}, ", text), text
    assert text.index(f"{second} │") < text.index(f"{first} │"), "newest first"
    assert re.search(r"last refresh: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, success", text), text
    assert re.search(r"fact_result\s*│\s*[\d,]+", text)
    newest = json.loads((mirror / "commits" / "all_benchmark_data.json").read_text())[0]["sha"]
    assert re.search(rf"all_benchmark_data\.csv\s*│\s*{newest[:12]}", text), text
    runs = (mirror / "gh-pages" / "benchmarks" / "commits.txt").read_text().split()
    assert re.search(rf"benchmark runs\s*│\s*{runs[-1]}", text), text


def test_status_reads_the_refresh_its_warehouse_recorded(warehouse: Path, tmp_path: Path, dagster_home: Path):
    """`last-refresh-in-the-warehouse`: the last refresh is the one the warehouse recorded, not
    the Dagster instance's newest run, which may have refreshed another warehouse; a run that
    left no end says so, and a damaged record is named."""
    other = tmp_path / "other"
    shutil.copytree(warehouse, other)
    mirror = _mirror_with_one_more_commit(tmp_path)
    for root in (warehouse, other):  # the newest run in the instance refreshed the other one
        assert invoke("refresh", "-w", str(root), "--upstream", str(mirror))[0] == 0
    with dg.DagsterInstance.get() as instance:
        first = instance.get_run_records(dg.RunsFilter(job_name="refresh"), ascending=True)[0].dagster_run
    code, text = invoke("status", "-w", str(warehouse))
    assert code == 0 and f"success (run {first.run_id[:8]}, launched by cli)" in text, text

    storage = Storage(str(warehouse))
    last_refresh.record(storage, "started", run_id="0123456789", launched_by="schedule", at=4102444800)
    code, text = invoke("status", "-w", str(warehouse))
    said = "last refresh: 2100-01-01 00:00:00 UTC, started (run 01234567, launched by schedule); no end recorded"
    assert code == 0 and said in " ".join(text.split()), text
    storage.write_text(last_refresh.LAST_REFRESH, "{not json")
    code, text = invoke("status", "-w", str(warehouse))
    said = " ".join(text.split())
    assert code == 0 and "last refresh: unknown: " in said and "last-refresh.json is not a refresh record" in said, text


def test_status_check_upstream_counts_what_is_new(warehouse: Path, tmp_path: Path):
    mirror = _mirror_with_one_more_commit(tmp_path)
    with env(LIGER_WAREHOUSE_UPSTREAM=str(mirror)):
        code, text = invoke("status", "-w", str(warehouse), "--check-upstream")
    assert code == 0, text
    assert "new upstream" in text
    assert re.search(r"all_benchmark_data\.csv\s*│[^\n]*│\s*1\s*│", text), text
    assert re.search(r"benchmark runs\s*│[^\n]*│\s*0\s*│", text), text


def test_status_without_a_warehouse_fails_clearly(tmp_path: Path, dagster_home: Path):
    code, text = invoke("status", "-w", str(tmp_path / "nothing"))
    assert code == 1
    assert "nothing published yet" in text
    assert not (tmp_path / "nothing").exists()


def test_exit_statuses_are_the_ones_the_readme_states(tmp_path: Path, dagster_home: Path):
    """2 for a usage error, 1 for a failure (a refresh that lost to another writer, and `status`
    of a warehouse with nothing published: above)."""
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "Exit status 1 is a failure" in readme and "Exit status 2 is a usage error" in readme
    missing = str(tmp_path / "nothing")
    for usage_error in (["status", "--no-such-option"], ["regressions", "--threshold", "lots"], ["no-such-command"]):
        assert invoke(*usage_error)[0] == 2, usage_error
    code, text = invoke("sql", "select 1", "-w", missing)
    assert code == 1 and f"no warehouse at sqlite:{missing}/catalog.sqlite" in " ".join(text.split()), text
