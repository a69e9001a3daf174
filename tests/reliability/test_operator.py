"""What an operator sees when something is wrong: the installed ``liger-warehouse``, run as a
subprocess, answers every error in one line saying what failed and one saying what to do
(``--debug`` shows the trace), and an upstream it cannot reach is named as such, with its
retries shown while they happen and the mirror directory as the way out.

Each case id is listed in docs/RELIABILITY.md.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from liger_warehouse.cli.progress_view import TASK_LABELS
from tests import fake_github as fg
from tests.fake_github import FakeGitHub
from tests.reliability.conftest import GITHUB, copy_warehouse, github_env
from tests.reliability.published import cli_env, cli_script, dagster_home, published

# Rich's progress bars: what the refresh shows while it runs, not part of what it says.
PROGRESS = re.compile(rf"^(stages|{'|'.join(map(re.escape, TASK_LABELS.values()))})\b")
FAST = {"LIGER_WAREHOUSE_MAX_ATTEMPTS": "3", "LIGER_WAREHOUSE_BACKOFF_SECONDS": "0.01"}
OFFLINE_HINT = ("--upstream", "LIGER_WAREHOUSE_UPSTREAM")
TRACE_MARKS = ("Traceback", "Stack Trace", " - ERROR - ", 'File "')


@dataclass
class Ran:
    code: int
    output: str

    @property
    def lines(self) -> list[str]:
        """What the command said: non-empty lines of stdout and stderr, progress bars left out."""
        return [line for line in self.output.splitlines() if line.strip() and not PROGRESS.match(line)]


def run(tmp_path: Path, *args: str, **env: str) -> Ran:
    home = dagster_home(tmp_path / "dagster_home")
    done = subprocess.run(
        [*cli_script(), *args],
        env=cli_env(home, **env),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    return Ran(done.returncode, done.stdout + done.stderr)


def assert_one_error(ran: Ran, what: str, hint: str) -> None:
    """Exit 1, and exactly two lines: ``error: …what…`` and the hint; no trace anywhere."""
    assert ran.code == 1, ran.output
    assert len(ran.lines) == 2, ran.output
    assert ran.lines[0].startswith("error: ") and what in ran.lines[0], ran.output
    assert hint in ran.lines[1], ran.output
    assert not any(mark in ran.output for mark in TRACE_MARKS), ran.output


@pytest.fixture
def warehouse(base_warehouse: Path, tmp_path: Path) -> Path:
    return copy_warehouse(base_warehouse, tmp_path / "warehouse")


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A path nobody may create: under a read-only directory, or for root (who may write
    anywhere on a normal file system) under /sys."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        yield locked / "out"
        locked.chmod(0o755)
        return
    target = Path("/sys/liger-warehouse-test-out")
    try:
        target.mkdir()
    except OSError:
        yield target
        return
    target.rmdir()
    pytest.skip("running as root and /sys is writable here: no path to refuse a write")


# -- one line for what failed, one for what to do --------------------------------------------


def test_a_sql_error_is_one_line_and_debug_shows_the_trace(warehouse: Path, tmp_path: Path):
    """`sql-syntax-error`"""
    ran = run(tmp_path, "sql", "-w", str(warehouse), "selct 1")
    assert_one_error(ran, 'syntax error at or near "selct"', "fix the query")
    traced = run(tmp_path, "--debug", "sql", "-w", str(warehouse), "selct 1")
    assert traced.code != 0 and "Traceback" in traced.output and "selct" in traced.output


OUT_CASES = [
    "export-out-is-a-file",
    "export-out-unwritable",
    "liger-csv-out-is-a-directory",
    "report-out-is-a-file",
    "report-out-unwritable",
]


@pytest.mark.parametrize("case", OUT_CASES)
def test_an_unusable_out_is_one_line_naming_it(case: str, warehouse: Path, tmp_path: Path, unwritable: Path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    a_directory = tmp_path / "a-directory"
    a_directory.mkdir()
    csv = ["export", "liger-csv", "--path", "benchmark/data/all_benchmark_data.csv"]
    records, report, in_the_way = ["export", "kernelindex"], ["report", "--no-png"], "a file stands where a directory"
    command, out, what, hint = {
        "export-out-is-a-file": (records, a_file, in_the_way, "give a directory"),
        "export-out-unwritable": (records, unwritable, str(unwritable), "for --out"),
        "liger-csv-out-is-a-directory": (csv, a_directory, "is a directory", "give a file path"),
        "report-out-is-a-file": (report, a_file, in_the_way, "give a directory"),
        "report-out-unwritable": (report, unwritable, str(unwritable), "for --out"),
    }[case]
    ran = run(tmp_path, *command, "-w", str(warehouse), "--out", str(out))
    assert_one_error(ran, what, hint)
    assert str(out) in ran.lines[0]
    assert a_file.read_text() == "not a directory\n" and list(a_directory.iterdir()) == []


@pytest.mark.parametrize("command", ["status", "refresh"])
def test_a_warehouse_dir_that_is_a_file_is_named(command: str, tmp_path: Path, before_mirror: Path):
    """`warehouse-dir-is-a-file`: status does not claim "nothing published", refresh does not
    crash with NotADirectoryError; neither touches the file."""
    a_file = tmp_path / "warehouse-file"
    a_file.write_text("x")
    ran = run(tmp_path, command, LIGER_WAREHOUSE_DIR=str(a_file), LIGER_WAREHOUSE_UPSTREAM=str(before_mirror))
    assert_one_error(ran, f"the warehouse root {a_file} is a file, not a directory", "LIGER_WAREHOUSE_DIR")
    assert a_file.read_text() == "x"


def test_a_failed_refresh_prints_its_summary_once(warehouse: Path, tmp_path: Path, before_mirror: Path):
    """`failed-refresh-prints-once`: upstream refuses the listing (HTTP 403); the refresh says
    which step failed and why, once, and that nothing published changed."""
    before = published(warehouse)
    with FakeGitHub(before_mirror) as fake:
        fake.inject(re.compile(r".*/commits\?.*"), fg.status(403), times=None)
        ran = run(tmp_path, "refresh", "-w", str(warehouse), **github_env(fake))
    assert_one_error(ran, "step upstream_snapshots failed: UpstreamError: ", "the published lake is unchanged")
    assert ran.output.count("HTTP 403") == 1, ran.output
    assert published(warehouse) == before


# -- an upstream that cannot be reached --------------------------------------------------------


@contextmanager
def black_hole() -> Iterator[str]:
    """A loopback address that never answers a connection: a listening socket with a full
    backlog, so the kernel drops every new SYN and connecting times out, as when packets to
    GitHub are dropped."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    queued = []
    for _ in range(3):
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(("127.0.0.1", port))
        queued.append(client)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for client in queued:
            client.close()
        server.close()


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: connections are refused


@contextmanager
def refusing() -> Iterator[str]:
    yield _closed_port()


def _github_at(base: str) -> dict[str, str]:
    return {"LIGER_WAREHOUSE_UPSTREAM": GITHUB, "LIGER_WAREHOUSE_GITHUB_API": base, "LIGER_WAREHOUSE_GITHUB_RAW": base}


UNREACHABLE_CASES = ["github-unreachable", "github-black-holed"]


@pytest.mark.parametrize("case", UNREACHABLE_CASES)
def test_an_unreachable_upstream_is_named_with_the_mirror_hint(case: str, warehouse: Path, tmp_path: Path):
    """Refused connections, then connections that time out: each retry is shown as it
    happens, the error names the listing and the host, and the hint points at a mirror."""
    before = published(warehouse)
    with black_hole() if case == "github-black-holed" else refusing() as base:
        ran = run(
            tmp_path, "refresh", "-w", str(warehouse),
            **_github_at(base), **FAST, LIGER_WAREHOUSE_TIMEOUT_SECONDS="1",
        )  # fmt: skip
    cause = "ConnectTimeout" if case == "github-black-holed" else "ConnectError"
    retries = [line for line in ran.lines if "retrying in" in line]
    assert len(retries) == 2 and all(cause in line for line in retries), ran.output
    assert "(attempt 1 of 3)" in retries[0] and "(attempt 2 of 3)" in retries[1]
    errors = [line for line in ran.lines if line not in retries]
    assert ran.code == 1 and len(errors) == 2, ran.output
    assert errors[0].startswith("error: step upstream_snapshots failed: UpstreamUnreachable: list of commits")
    assert f"{base}/repos/linkedin/Liger-Kernel/commits" in errors[0] and cause in errors[0]
    assert all(word in errors[1] for word in OFFLINE_HINT), ran.output
    assert not any(mark in ran.output for mark in TRACE_MARKS), ran.output
    assert published(warehouse) == before


def test_status_check_upstream_offline_shows_the_warehouse_then_one_line(warehouse: Path, tmp_path: Path):
    """`status-check-upstream-unreachable`: with the default retry settings, what `status` shows
    without the flag, then one line naming the listing it tried; no "new upstream" count, exit 1,
    and all of it within 5 s (each request is tried once)."""
    local = run(tmp_path, "status", "-w", str(warehouse))
    base = _closed_port()
    started = time.monotonic()
    ran = run(tmp_path, "status", "-w", str(warehouse), "--check-upstream", **_github_at(base))
    assert time.monotonic() - started < 5, ran.output
    assert ran.code == 1 and local.code == 0, ran.output
    assert ran.lines[:-1] == local.lines, ran.output
    said = ran.lines[-1]
    assert said.startswith("error: upstream unreachable, so nothing new is counted: list of commits for "), said
    assert f"{base}/repos/linkedin/Liger-Kernel/commits" in said and "ConnectError" in said, said
    assert "new upstream" not in ran.output and "retrying" not in ran.output


def test_status_takes_upstream_as_an_option(warehouse: Path, tmp_path: Path, after_mirror: Path):
    """`status-upstream-option`: --upstream is what --check-upstream lists."""
    ran = run(tmp_path, "status", "-w", str(warehouse), "--check-upstream", "--upstream", str(after_mirror))
    assert ran.code == 0, ran.output
    counts = [int(n) for n in re.findall(r"│\s*(\d+)\s*│\s*$", ran.output, flags=re.M)]
    assert "new upstream" in ran.output and sum(counts) > 0, ran.output  # AFTER is ahead of BEFORE
    missing = tmp_path / "no-such-mirror"
    ran = run(tmp_path, "status", "-w", str(warehouse), "--check-upstream", "--upstream", str(missing))
    assert_one_error(ran, f"upstream {str(missing)!r}: no such directory", "--upstream")


# Every case of issue 11's operator points that docs/RELIABILITY.md lists, and the test that
# shows it (tests/reliability/test_reliability_doc.py checks both).
CASES = {
    "sql-syntax-error": "tests/reliability/test_operator.py::test_a_sql_error_is_one_line_and_debug_shows_the_trace",
    **{case: "tests/reliability/test_operator.py::test_an_unusable_out_is_one_line_naming_it" for case in OUT_CASES},
    "warehouse-dir-is-a-file": "tests/reliability/test_operator.py::test_a_warehouse_dir_that_is_a_file_is_named",
    "failed-refresh-prints-once": "tests/reliability/test_operator.py::test_a_failed_refresh_prints_its_summary_once",
    **{
        case: "tests/reliability/test_operator.py::test_an_unreachable_upstream_is_named_with_the_mirror_hint"
        for case in UNREACHABLE_CASES
    },
    "status-check-upstream-unreachable": (
        "tests/reliability/test_operator.py::test_status_check_upstream_offline_shows_the_warehouse_then_one_line"
    ),
    "status-upstream-option": "tests/reliability/test_operator.py::test_status_takes_upstream_as_an_option",
    "one-instance-dg-dev": "tests/test_dagster_instance.py::test_the_cli_dg_dev_and_the_sensor_share_one_instance",
    "sensor-follows-the-refreshed-root": (
        "tests/test_dagster_instance.py::test_the_cli_dg_dev_and_the_sensor_share_one_instance"
    ),
    "one-instance-dagster-dev": "tests/test_dagster_instance.py::test_dagster_dev_shows_what_the_cli_recorded",
    "last-refresh-in-the-warehouse": (
        "tests/test_cli_warehouse.py::test_status_reads_the_refresh_its_warehouse_recorded"
    ),
    "dg-check-defs": "tests/test_dagster_instance.py::test_dg_check_defs",
    "tags-say-who-launched": "tests/test_deploy_config.py::test_runs_say_who_launched_them",
    "wheel-install-every-view": "tests/test_wheel_install.py::test_a_wheel_in_a_fresh_venv_builds_every_view",
    "missing-sql-is-an-error": (
        "tests/test_wheel_install.py::test_a_missing_sql_directory_is_an_error_not_a_lake_without_views"
    ),
    "no-change-refresh-one-line": "tests/test_cli_warehouse.py::test_refresh_with_nothing_new_says_so_in_one_line",
    "first-publish-not-new": "tests/test_refresh_metadata.py::test_a_refresh_that_ingests_a_regression_warns",
    "readme-writes-ignored-paths": "tests/test_readme_paths.py::test_readme_commands_write_only_ignored_paths",
}
