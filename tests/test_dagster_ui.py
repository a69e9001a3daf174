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

from liger_warehouse.model.tables import INGESTED
from pipelines.defs.schedules import LAUNCHED_BY
from tests.conftest import FAST_RETRIES
from tests.deploy_instance import local_dagster_home
from tests.fake_github import FakeGitHub
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[1]
ARTIFACTS = PROJECT / "test-artifacts"
DOCS_SCREENSHOT = PROJECT / "docs" / "dagster-asset-fact_result.png"
LOCATION = "liger_warehouse"
STARTUP_SECONDS = 60
RUN_SECONDS = 90
PAGE_SECONDS = 180  # the asset page under a full suite's load
# The warehouse's own assets; the derived ones (exports, report, analysis) have their own tests.
OUTPUT_ASSETS = {"kernelindex_export", "liger_report"}  # the outputs job, launched by a sensor
IMPORT_ASSETS = {"kernelindex_import"}  # the imports job, never part of a refresh
WAREHOUSE_ASSETS = {"upstream_snapshots", *INGESTED, "published_generation", "liger_duckdb"}

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
def dagster_dev(tmp_path_factory: pytest.TempPathFactory, fake_github_small: FakeGitHub) -> Iterator[Dagster]:
    tmp = tmp_path_factory.mktemp("dagster_ui")
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


def test_refresh_materializes_every_asset_with_its_metadata(dagster_dev: Dagster, refreshed: str):
    nodes = {n["assetKey"]["path"][-1]: n for n in dagster_dev.graphql(ASSETS)["assetNodes"]}
    assert {"upstream_snapshots", "fact_result", "published_generation", "liger_duckdb"} <= set(nodes)
    for name, node in nodes.items():
        assert node["description"] and node["groupName"] != "default" and node["kinds"], name
        if name not in OUTPUT_ASSETS | IMPORT_ASSETS:
            assert node["assetMaterializations"][0]["runId"] == refreshed, name
    for name in WAREHOUSE_ASSETS:
        metadata = _metadata(nodes[name])
        assert metadata["dagster/row_count"]["intValue"] >= 0, name
        assert metadata["dagster/column_schema"]["schema"]["columns"], name
    fact = _metadata(nodes["fact_result"])
    assert fact["dagster/row_count"]["intValue"] == fact["results_added"]["intValue"] > 0
    assert {c["name"] for c in fact["dagster/column_schema"]["schema"]["columns"]} >= {"result_digest", "p50"}
    published = _metadata(nodes["published_generation"])
    assert published["results_restated"]["intValue"] == published["results_removed"]["intValue"] == 0
    revisions = published["revisions"]["mdStr"]
    assert "https://github.com/linkedin/Liger-Kernel/commit/" in revisions  # main-branch and gh-pages links
    assert "gh-pages run" in revisions
    assert "| kernel |" in _metadata(nodes["liger_duckdb"])["newest_regressions"]["mdStr"]


def test_outputs_job_follows_the_refresh(dagster_dev: Dagster, refreshed: str):
    """The daemon's run-status sensor launches the outputs job once the refresh has succeeded."""
    deadline = time.monotonic() + RUN_SECONDS + 60
    while time.monotonic() < deadline:
        nodes = {n["assetKey"]["path"][-1]: n for n in dagster_dev.graphql(ASSETS)["assetNodes"]}
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
    nodes = {n["assetKey"]["path"][-1]: n for n in dagster_dev.graphql(ASSETS)["assetNodes"]}
    policy = nodes["upstream_snapshots"]["internalFreshnessPolicy"]
    assert policy["warnWindowSeconds"] == 36 * 3600
    assert policy["failWindowSeconds"] > policy["warnWindowSeconds"]


def test_the_first_refresh_calls_no_regression_new(dagster_dev: Dagster, refreshed: str):
    """A first refresh ingests all of upstream's history, regressions included: that is not
    news, so the warning check passes and says there was nothing to compare with."""
    checks = dagster_dev.graphql(CHECK, key={"path": ["liger_duckdb"]}, name="no_new_regressions")
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
