"""One Dagster instance by default: with DAGSTER_HOME unset, ``liger-warehouse``, ``dg dev``,
``dagster dev``, ``dg launch`` and ``dagster asset materialize``, each started in the project
directory, record their runs in the same instance (the project's dagster.yaml: ./.dagster_home),
and none of them warns that it found no dagster.yaml.

The project directory is a scratch copy (pyproject.toml, dagster.yaml, workspace.yaml and a
link to pipelines/), so the instance these tests create is not the repository's own. The
warehouse root is somewhere else than the default ./warehouse: the outputs run that the
daemon's sensor launches after the CLI's refresh must write there, and ./warehouse must not
appear.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from liger_warehouse.lake.connect import latest_snapshot
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.last_refresh import last
from liger_warehouse.store.storage import Storage
from pipelines.defs.schedules import LAUNCHED_BY
from tests.small_mirror import small_mirror
from tests.test_dagster_ui import LAUNCH, Dagster, _free_port, _stop

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOCATION = "liger_warehouse"
NO_CONFIG = "No dagster instance configuration file"
# The daemon's sensor launches an outputs run per refresh; on a loaded 2-core machine (the suite
# runs in parallel) a launch and its run have taken over three minutes. A bound, not a speed.
OUTPUTS_SECONDS = 360

RUNS = """
query Runs {
  runsOrError { ... on Runs { results { runId jobName status tags { key value } } } }
}"""

SENSOR_TICKS = """
query Ticks($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) { ... on Sensor { sensorState { ticks(limit: 1) { status } } } }
}"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("project")
    for name in ("pyproject.toml", "dagster.yaml", "workspace.yaml"):
        (here / name).write_text((PROJECT / name).read_text())
    (here / "pipelines").symlink_to(PROJECT / "pipelines")  # dg finds the project's module here
    return here


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    """No DAGSTER_HOME: every command picks its instance the default way."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "LIGER_WAREHOUSE_"))}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_mirror(tmp_path_factory.mktemp("upstream") / "liger-kernel")


def _run(project: Path, env: dict[str, str], *args: str | Path, **extra: str) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=project,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{args}:\n{out[-4000:]}"
    assert NO_CONFIG not in out, out
    return out


def _serve(command: list[str], project: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen, Dagster]:
    port = _free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    client = Dagster(f"http://127.0.0.1:{port}")
    client.wait_until_loaded(proc, log)
    return proc, client


def _runs(client: Dagster) -> dict[str, dict]:
    results = client.graphql(RUNS)["runsOrError"]["results"]
    return {r["runId"]: {**r, "tags": {t["key"]: t["value"] for t in r["tags"]}} for r in results}


def _wait(what: str, seconds: float, check) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(2)
    pytest.fail(f"{what}: not within {seconds:.0f}s")


def _outputs_written(root: Path) -> bool:
    """The export and the report of the lake's newest snapshot are in ``root``."""
    snapshot = latest_snapshot(Lake.of(str(root)))
    export = root / "exports" / "kernelindex" / f"{snapshot}.ndjson"
    return export.exists() and export.stat().st_size > 0 and (root / "reports" / str(snapshot) / "index.html").exists()


def test_the_cli_dg_dev_and_the_sensor_share_one_instance(project: Path, env: dict[str, str], mirror: Path):
    """`one-instance-dg-dev`, `sensor-follows-the-refreshed-root`, `tags-say-who-launched`: a
    CLI refresh of a root other than ./warehouse, then one launched through the UI's API with
    another root as run config; the daemon's sensor follows each with an outputs run in that
    root, and Dagster's own commands land in the same instance."""
    served = {**env, "LIGER_WAREHOUSE_UPSTREAM": str(mirror)}  # the code location's default upstream
    by_cli, by_ui = project.parent / "by-cli" / "warehouse", project.parent / "by-ui" / "warehouse"
    log = project.parent / "dg-dev.log"
    proc, client = _serve([str(BIN / "dg"), "dev"], project, served, log)
    try:
        selector = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__"}
        # A run status sensor looks at runs after its first tick only.
        for name in ("outputs_after_refresh", "refresh_success_recorded"):
            sensor = {**selector, "sensorName": name}
            _wait(f"{name}'s first tick", 90, lambda sensor=sensor: client.graphql(SENSOR_TICKS, selector=sensor)
                  ["sensorOrError"]["sensorState"]["ticks"])  # fmt: skip

        _run(project, env, BIN / "liger-warehouse", "refresh", "-w", by_cli, "--upstream", mirror)
        (cli_run,) = [r for r in _runs(client).values() if r["jobName"] == "refresh"]
        assert cli_run["status"] == "SUCCESS" and cli_run["tags"][LAUNCHED_BY] == "cli"

        config = {"resources": {"warehouse": {"config": {"root": str(by_ui)}}}}
        params = {"selector": {**selector, "jobName": "refresh"}, "runConfigData": config}
        launched = client.graphql(LAUNCH, params=params)["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched

        def followed() -> list[dict]:
            runs = _runs(client).values()
            outputs = [r for r in runs if r["jobName"] == "outputs" and r["status"] == "SUCCESS"]
            return outputs if len(outputs) == 2 else []

        outputs = _wait("an outputs run after each refresh", OUTPUTS_SECONDS, followed)
        assert all(r["tags"][LAUNCHED_BY] == "sensor" for r in outputs)
        ui_run = _runs(client)[launched["run"]["runId"]]
        assert ui_run["status"] == "SUCCESS" and ui_run["tags"][LAUNCHED_BY] == "manual"
        # `last-refresh-in-the-warehouse`: the daemon records the UI's run in the root it refreshed.
        _wait("the UI run's outcome recorded in its warehouse", OUTPUTS_SECONDS, lambda: last(Storage(str(by_ui))))
        assert _outputs_written(by_cli) and _outputs_written(by_ui)
        assert not (project / "warehouse").exists()  # the default root was never touched

        # Dagster's own commands, from the same directory, land in the same instance.
        materialize = [BIN / "dagster", "asset", "materialize", "-m", "pipelines.definitions", "--select"]
        _run(project, env, *materialize, "regression_digest", LIGER_WAREHOUSE_DIR=str(by_cli))
        _run(project, env, BIN / "dg", "launch", "--assets", "regression_digest", LIGER_WAREHOUSE_DIR=str(by_cli))
        asset_runs = [r for r in _runs(client).values() if r["jobName"] == "__ASSET_JOB"]
        assert len(asset_runs) == 2 and all(r["status"] == "SUCCESS" for r in asset_runs), asset_runs
    finally:
        _stop(proc)
    assert NO_CONFIG not in log.read_text()

    # Each warehouse names its own refresh, though the UI's ran later in the same instance.
    for root, run, by in ((by_cli, cli_run, "cli"), (by_ui, ui_run, "manual")):
        status = _run(project, env, BIN / "liger-warehouse", "status", "-w", root)
        assert f"success (run {run['runId'][:8]}, launched by {by})" in " ".join(status.split()), status


def test_dagster_dev_shows_what_the_cli_recorded(
    project: Path, env: dict[str, str], mirror: Path, monkeypatch: pytest.MonkeyPatch
):
    """`one-instance-dagster-dev`: `dagster dev` shows the runs ./.dagster_home holds, the
    CLI's newest refresh among them."""
    root = project.parent / "another" / "warehouse"
    _run(project, env, BIN / "liger-warehouse", "refresh", "-w", root, "--upstream", mirror)
    log = project.parent / "dagster-dev.log"
    proc, client = _serve([str(BIN / "dagster"), "dev"], project, env, log)
    try:
        shown = _runs(client)
    finally:
        _stop(proc)
    assert NO_CONFIG not in log.read_text()
    # What dagster dev showed is exactly what ./.dagster_home holds, the CLI's refresh included.
    monkeypatch.chdir(project)  # dagster.yaml names ./.dagster_home relative to where it is read
    home = InstanceRef.from_dir(str(project / ".dagster_home"), config_dir=str(project))
    with dg.DagsterInstance.from_ref(home) as instance:
        kept = {r.dagster_run.run_id: r.dagster_run for r in instance.get_run_records()}
    assert set(shown) == set(kept)
    newest_refresh = next(run for run in kept.values() if run.job_name == "refresh")
    assert newest_refresh.tags[LAUNCHED_BY] == "cli" and shown[newest_refresh.run_id]["status"] == "SUCCESS"


def test_dg_check_defs(project: Path, env: dict[str, str]):
    """`dg-check-defs`"""
    assert "All definitions loaded successfully" in _run(project, env, BIN / "dg", "check", "defs")
