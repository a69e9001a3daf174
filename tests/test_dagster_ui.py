"""The Dagster UI end to end: ``dagster dev`` (webserver and daemon) on loopback, the refresh
launched through GraphQL against the fake GitHub, its materializations and their metadata read
back through GraphQL, then the asset page rendered by headless Chromium.

The instance is deploy/dagster.yaml with SQLite for Postgres, so the run goes through the
production queue (QueuedRunCoordinator, tag limit) and launcher. Screenshots go to
test-artifacts/; with LIGER_UPDATE_DOCS_SCREENSHOT=1 the asset page is also copied to docs/.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import sync_playwright

from liger_warehouse.model.tables import STORED
from pipelines.defs.schedules import LAUNCHED_BY
from tests.conftest import FAST_RETRIES
from tests.deploy_instance import local_dagster_home
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1]
ARTIFACTS = PROJECT / "test-artifacts"
DOCS_SCREENSHOT = PROJECT / "docs" / "dagster-asset-fact_result.png"
LOCATION = "liger_warehouse"
STARTUP_SECONDS = 60
RUN_SECONDS = 90
PAGE_SECONDS = 180  # the asset page under a full suite's load
OUTPUT_ASSETS = {"kernelindex_export", "liger_report"}  # the outputs job, launched by a sensor
IMPORT_ASSETS = {"kernelindex_import"}  # the imports job, never part of a refresh
MAINTENANCE_ASSETS = {"lake_maintenance"}  # the maintenance job, never part of a refresh
# Every table of the lake is an asset: the stored ones and one per SQL file of sql/derived/.
LAKE_TABLES = {*STORED, *(p.stem for p in (PROJECT / "sql" / "derived").glob("*.sql"))}
# The blocking checks of the publishing step, on the tables they guard.
BLOCKING_CHECKS = {
    "digests_unique": "fact_result",
    "no_orphan_digests": "fact_result",
    "p20_le_p50_le_p80": "fact_result",
    "every_row_reconciled": "fact_revision_member",
}

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}"""

RUN_STATUS = """
query Run($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }"""

RUN_TAGS = """
query Run($id: ID!) { runOrError(runId: $id) { ... on Run { tags { key value } } } }"""

ASSETS = """
query Assets {
  assetNodes(loadMaterializations: true) {
    assetKey { path }
    description
    groupName
    kinds
    internalFreshnessPolicy { ... on TimeWindowFreshnessPolicy { warnWindowSeconds failWindowSeconds } }
    assetChecksOrError { ... on AssetChecks { checks { name blocking description } } }
    assetMaterializations(limit: 1) {
      runId
      metadataEntries {
        label
        ... on IntMetadataEntry { intValue }
        ... on MarkdownMetadataEntry { mdStr }
        ... on TableSchemaMetadataEntry { schema { columns { name } } }
      }
    }
  }
}"""

CHECK = """
query Check($key: AssetKeyInput!, $name: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 1) {
    runId
    status
    evaluation { success severity description }
  }
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Dagster:
    """A client for the GraphQL API of one ``dagster dev``."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(timeout=30)

    def graphql(self, query: str, **variables: object) -> dict:
        response = self.http.post(f"{self.base}/graphql", json={"query": query, "variables": variables})
        response.raise_for_status()
        body = response.json()
        assert "errors" not in body, body["errors"]
        return body["data"]

    def wait_until_loaded(self, proc: subprocess.Popen, log: Path) -> None:
        """Until the code location answers: the webserver serves before it has loaded the code."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"dagster dev exited early:\n{log.read_text()[-3000:]}"
            try:
                nodes = self.graphql("{ assetNodes { id } }")["assetNodes"]
                if nodes:
                    return
            except (httpx.HTTPError, AssertionError):
                pass
            time.sleep(0.5)
        pytest.fail(f"dagster dev did not load {LOCATION} in {STARTUP_SECONDS}s:\n{log.read_text()[-3000:]}")


def _environment(tmp: Path, fake: FakeGitHub) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "LIGER_WAREHOUSE_"))}
    return {
        **environ,
        **FAST_RETRIES,
        "DAGSTER_HOME": str(local_dagster_home(tmp / "dagster_home")),
        "LIGER_WAREHOUSE_DIR": str(tmp / "warehouse"),
        "LIGER_WAREHOUSE_UPSTREAM": "github:linkedin/Liger-Kernel",
        "LIGER_WAREHOUSE_GITHUB_API": fake.api_base,
        "LIGER_WAREHOUSE_GITHUB_RAW": fake.raw_base,
        "PYTHONUNBUFFERED": "1",
    }


def _stop(proc: subprocess.Popen) -> None:
    """Stop dagster dev and the webserver, daemon and code server it started (its process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def fake_github_small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHub]:
    with FakeGitHub(small_mirror(tmp_path_factory.mktemp("mirror") / "liger-kernel")) as fake:
        yield fake


@pytest.fixture(scope="module")
def dagster_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch directory of dagster dev: its instance, its log and the warehouse root."""
    return tmp_path_factory.mktemp("dagster_ui")


@pytest.fixture(scope="module")
def dagster_dev(dagster_tmp: Path, fake_github_small: FakeGitHub) -> Iterator[Dagster]:
    tmp = dagster_tmp
    port = _free_port()
    log = tmp / "dagster-dev.log"
    dagster = str(Path(sys.executable).parent / "dagster")
    command = [dagster, "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=PROJECT,
            env=_environment(tmp, fake_github_small),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        client = Dagster(f"http://127.0.0.1:{port}")
        client.wait_until_loaded(proc, log)
        yield client
    finally:
        _stop(proc)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log, ARTIFACTS / "dagster-dev.log")


@pytest.fixture(scope="module")
def refreshed(dagster_dev: Dagster) -> str:
    """The run id of one refresh launched through the API, once it has succeeded."""
    selector = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__", "jobName": "refresh"}
    launched = dagster_dev.graphql(LAUNCH, params={"selector": selector, "runConfigData": {}})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    deadline = time.monotonic() + RUN_SECONDS
    status = None
    while time.monotonic() < deadline:
        status = dagster_dev.graphql(RUN_STATUS, id=run_id)["runOrError"]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            break
        time.sleep(1)
    assert status == "SUCCESS", f"run {run_id} ended {status}"
    return run_id


def _metadata(node: dict) -> dict[str, dict]:
    return {entry["label"]: entry for entry in node["assetMaterializations"][0]["metadataEntries"]}


def _nodes(dagster_dev: Dagster) -> dict[str, dict]:
    return {n["assetKey"]["path"][-1]: n for n in dagster_dev.graphql(ASSETS)["assetNodes"]}


def _lake_counts(root: Path) -> dict[str, tuple[int, list[str]]]:
    """Each lake table's rows and columns, read back by a plain DuckDB client attaching the lake."""
    with open_views(root / "catalog.sqlite") as con:
        return {
            table: (
                con.execute(f"select count(*) from {table}").fetchone()[0],
                [name for name, *_ in con.execute(f"describe {table}").fetchall()],
            )
            for table in LAKE_TABLES
        }


def test_refresh_materializes_every_asset_with_its_metadata(dagster_dev: Dagster, dagster_tmp: Path, refreshed: str):
    nodes = _nodes(dagster_dev)
    assert {"upstream_snapshots", "regression_digest", *LAKE_TABLES} <= set(nodes)
    for name, node in nodes.items():
        assert node["description"] and node["groupName"] != "default" and node["kinds"], name
        if name not in OUTPUT_ASSETS | IMPORT_ASSETS | MAINTENANCE_ASSETS:
            assert node["assetMaterializations"][0]["runId"] == refreshed, name
    # Every table of the lake shows the rows and the columns the lake itself holds.
    for name, (rows, columns) in _lake_counts(dagster_tmp / "warehouse").items():
        metadata = _metadata(nodes[name])
        assert metadata["dagster/row_count"]["intValue"] == rows, name
        assert [c["name"] for c in metadata["dagster/column_schema"]["schema"]["columns"]] == columns, name
    upstream = _metadata(nodes["upstream_snapshots"])
    assert upstream["dagster/row_count"]["intValue"] > 0 and upstream["dagster/column_schema"]["schema"]["columns"]
    fact = _metadata(nodes["fact_result"])
    assert fact["dagster/row_count"]["intValue"] == fact["results_added"]["intValue"] > 0
    assert fact["results_restated"]["intValue"] == fact["results_removed"]["intValue"] == 0
    assert {c["name"] for c in fact["dagster/column_schema"]["schema"]["columns"]} >= {"result_digest", "p50"}
    revisions = _metadata(nodes["fact_revision_member"])["revisions"]["mdStr"]
    assert "https://github.com/linkedin/Liger-Kernel/commit/" in revisions  # main-branch and gh-pages links
    assert "gh-pages run" in revisions
    assert _metadata(nodes["fact_change_point"])["series"]["intValue"] > 0


def test_the_blocking_checks_ran_and_passed(dagster_dev: Dagster, refreshed: str):
    """Each blocking check of the publishing step shows on the table it guards, with the
    refresh's execution of it."""
    nodes = _nodes(dagster_dev)
    for name, table in BLOCKING_CHECKS.items():
        (shown,) = [c for c in nodes[table]["assetChecksOrError"]["checks"] if c["name"] == name]
        assert shown["blocking"] and shown["description"], name
        execution = dagster_dev.graphql(CHECK, key={"path": [table]}, name=name)["assetCheckExecutions"][0]
        assert execution["runId"] == refreshed, name
        assert execution["status"] == "SUCCEEDED" and execution["evaluation"]["success"] is True, execution
        assert execution["evaluation"]["severity"] == "ERROR", name


def test_outputs_job_follows_the_refresh(dagster_dev: Dagster, refreshed: str):
    """The daemon's run-status sensor launches the outputs job once the refresh has succeeded."""
    deadline = time.monotonic() + RUN_SECONDS + 60
    while time.monotonic() < deadline:
        nodes = _nodes(dagster_dev)
        done = {name for name in OUTPUT_ASSETS if nodes[name]["assetMaterializations"]}
        if done == OUTPUT_ASSETS:
            break
        time.sleep(2)
    assert done == OUTPUT_ASSETS, "the outputs job did not follow the refresh"
    for name in OUTPUT_ASSETS:
        assert nodes[name]["assetMaterializations"][0]["runId"] != refreshed, name
    # Tags say who launched each run: the refresh by hand (here through the API), the outputs by the sensor.
    assert _tags(dagster_dev, refreshed)[LAUNCHED_BY] == "manual"
    outputs_run = nodes["liger_report"]["assetMaterializations"][0]["runId"]
    assert _tags(dagster_dev, outputs_run)[LAUNCHED_BY] == "sensor"


def _tags(dagster_dev: Dagster, run_id: str) -> dict[str, str]:
    return {t["key"]: t["value"] for t in dagster_dev.graphql(RUN_TAGS, id=run_id)["runOrError"]["tags"]}


def test_freshness_policy_warns_after_36_hours(dagster_dev: Dagster, refreshed: str):
    nodes = _nodes(dagster_dev)
    policy = nodes["upstream_snapshots"]["internalFreshnessPolicy"]
    assert policy["warnWindowSeconds"] == 36 * 3600
    assert policy["failWindowSeconds"] > policy["warnWindowSeconds"]


def test_the_first_refresh_calls_no_regression_new(dagster_dev: Dagster, refreshed: str):
    """A first refresh ingests all of upstream's history, regressions included: that is not
    news, so the warning check passes and says there was nothing to compare with."""
    on = [name for name, node in _nodes(dagster_dev).items()
          if any(c["name"] == "no_new_regressions" for c in node["assetChecksOrError"].get("checks", []))]  # fmt: skip
    assert len(on) == 1, f"the check no_new_regressions is on {on}"
    checks = dagster_dev.graphql(CHECK, key={"path": on}, name="no_new_regressions")
    execution = checks["assetCheckExecutions"][0]
    assert execution["runId"] == refreshed
    assert execution["evaluation"]["severity"] == "WARN"
    assert execution["evaluation"]["success"] is True, execution
    assert execution["evaluation"]["description"].startswith("not checked: first publish, nothing to compare with")
    assert execution["status"] == "SUCCEEDED"


def test_asset_page_renders_in_chromium(dagster_dev: Dagster, refreshed: str):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no `chromium` on PATH: apt-get install chromium (Debian's package, no browser download)")
    # The first visit on localhost opens a community sign-up dialog over the page: dismiss it.
    assert dagster_dev.graphql("mutation { setNuxSeen }")["setNuxSeen"] is True
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "dagster-asset-fact_result.png"
    shot.unlink(missing_ok=True)
    # Playwright drives Debian's chromium (never a downloaded browser) and waits for what the app
    # renders, however long a loaded machine takes, instead of a fixed virtual-time budget.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{dagster_dev.base}/assets/fact_result", wait_until="domcontentloaded")
            # Rendered by the app, not the HTML shell: the asset's own description, kinds and row count.
            for text in ("One row per result ever published", "Row count", "Parquet"):
                page.get_by_text(text).first.wait_for(timeout=PAGE_SECONDS * 1000)
            page.screenshot(path=shot)
        finally:
            browser.close()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    if os.getenv("LIGER_UPDATE_DOCS_SCREENSHOT") == "1":
        shutil.copy(shot, DOCS_SCREENSHOT)
