"""The nightly digest: a refresh that brings a run with known regressions writes the digest and
POSTs it, once, to a real HTTP server on loopback; the CLI prints it; bad settings write nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.alerts.digest import RunStep, commits_between
from liger_warehouse.alerts.webhook import WebhookError, parse_webhooks
from liger_warehouse.cli import app
from tests.alerting import inject_run, runs, steadiest_kernels, url, webhook_server
from tests.conftest import env, refresh
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror

INJECTED_RUN = "abcdef0"


@pytest.fixture
def webhook() -> Iterator[ThreadingHTTPServer]:
    with webhook_server() as server:
        yield server


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_run_with_regressions_is_digested_and_posted_once(tmp_path: Path, webhook: ThreadingHTTPServer) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=12)  # the history a verdict needs
    root = tmp_path / "warehouse"
    assert refresh(root, upstream=str(mirror)).result.success
    first = json.loads((root / "digests" / f"{runs(mirror)[-1]}.json").read_text())
    assert [entry["run"] for entry in first["runs"]] == [runs(mirror)[-1]], "a first build digests its newest run"

    [kernel] = steadiest_kernels(root)
    inject_run(mirror, INJECTED_RUN, [kernel])
    hooks = f"{url(webhook, '/hook')} slack:{url(webhook, '/chat')} {url(webhook, '/down')}"
    assert refresh(root, upstream=str(mirror), LIGER_WAREHOUSE_ALERT_WEBHOOK=hooks).result.success
    by_path = {path: body for path, body in webhook.received}
    assert [path for path, _ in webhook.received].count("/hook") == 1
    assert [path for path, _ in webhook.received].count("/down") == 3, "a failing webhook is tried three times"
    posted = by_path["/hook"]
    stored = json.loads((root / "digests" / f"{INJECTED_RUN}.json").read_text())
    assert posted == stored
    [entry] = posted["runs"]
    assert (entry["run"], entry["previous_run"]) == (INJECTED_RUN, runs(mirror)[-2])
    regressed = {line["kernel"] for line in entry["lines"] if line["verdict"] == "regression"}
    assert regressed == {kernel} and entry["regressions"] >= 1
    assert all(s["provider"].startswith("liger") for line in entry["lines"] for s in line["series"])
    assert entry["environment_shift"] is None, "one kernel moved: no environment shift"
    assert all(isinstance(line["suspect_commits"], list) for line in entry["lines"])
    assert by_path["/chat"] == {"text": (root / "digests" / f"{INJECTED_RUN}.md").read_text()}
    assert f"**{kernel}**" in by_path["/chat"]["text"]

    code, printed = _cli("digest", "--warehouse", str(root), "--format", "json")
    assert code == 0 and json.loads(printed) == stored
    code, printed = _cli("digest", "--warehouse", str(root), "--run", runs(mirror)[-2])
    assert code == 0 and printed.startswith("# Liger benchmark digest")

    webhook.received.clear()
    _assert_commits_between(root, mirror)
    assert refresh(root, upstream=str(mirror), LIGER_WAREHOUSE_ALERT_WEBHOOK=hooks).result.success
    assert webhook.received == [], "nothing new: no digest, no POST"


def _assert_commits_between(root: Path, mirror: Path) -> None:
    """Each step's commits are the compare's, named by short sha and title, (#PR) kept."""
    named = []
    with open_views(root / "catalog.sqlite") as con:
        for base, head in pairwise(runs(mirror)[:-1]):
            compare = mirror / "compare" / f"{base.split('-v')[0]}...{head.split('-v')[0]}.json"
            commits = json.loads(compare.read_text())["commits"] if compare.is_file() else []
            expected = [f"{c['sha'][:7]} {c['commit']['message'].splitlines()[0]}" for c in commits]
            assert commits_between(con, RunStep(base, head)) == expected, (base, head)
            named += expected
    assert any("(#" in line for line in named), "the cut's runs have merged pull requests between them"


def test_a_webhook_that_is_not_http_is_refused_by_name() -> None:
    with pytest.raises(WebhookError, match=r"alert webhook 'ftp://example\.org/x' is not an http"):
        parse_webhooks("https://example.org/ok ftp://example.org/x")
    assert [h.slack for h in parse_webhooks("slack:https://a.example/h, http://b.example/h")] == [True, False]


@pytest.mark.slow
def test_a_bad_webhook_setting_fails_the_digest_and_writes_nothing(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=2)
    root = tmp_path / "warehouse"
    built = refresh(root, upstream=str(mirror), LIGER_WAREHOUSE_ALERT_WEBHOOK="mailto:team@example.org")
    failed = [e.step_key for e in built.result.all_events if e.is_step_failure]
    assert failed == ["regression_digest"]
    assert not (root / "digests").exists()
    with open_views(root / "catalog.sqlite") as con:
        assert con.execute("select count(*) from fact_result").fetchone()[0] > 0, "the lake itself is published"


def test_digest_without_digests_says_so(tmp_path: Path) -> None:
    with env(LIGER_WAREHOUSE_DIR=str(tmp_path)):
        code, printed = _cli("digest")
    assert code == 1 and "this warehouse has no digest yet" in printed
