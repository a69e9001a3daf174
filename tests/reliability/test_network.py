"""Network faults from a loopback fake GitHub: bounded retries, then a clear error naming the
URL and the revision; nothing partial is stored; the rest of the refresh is kept or deferred.

Two levels: ``HttpClient`` against the fake (every kind, with exact attempt counts and
messages), then the whole refresh job per kind, with the fault on one new revision while the
other new revisions go through, and a second refresh that picks the deferred one up.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.http import HttpClient, HttpPolicy, UpstreamError
from tests import fake_github as fg
from tests.conftest import refresh
from tests.fake_github import FakeGitHub
from tests.reliability.conftest import copy_warehouse
from tests.reliability.published import (
    Published,
    assert_raw_store_sound,
    assert_still_there,
    contents,
    published,
    step_failures,
    summary,
)
from tests.reliability.upstreams import CUTEDSL, CUTILE, DATA, commits

ATTEMPTS = 3
CAP = 64 * 1024
# The timeout is short so that a stall (3 s) times out quickly, and long enough that the fake's
# answer to a retry still arrives in time while the suite loads both cores: at 0.4 s, the retry
# after a rate limit timed out once in a full run (3 attempts counted, 2 expected).
POLICY = HttpPolicy(timeout=1.0, max_attempts=ATTEMPTS, backoff_base=0.01, max_wait=5, max_bytes=CAP)
RUN_FILE = "benchmarks/b6ed735/benchmark.csv"


@pytest.fixture
def fake(before_mirror: Path) -> Iterator[FakeGitHub]:
    with FakeGitHub(before_mirror) as server:
        yield server


@pytest.fixture
def client() -> Iterator[HttpClient]:
    http = HttpClient(POLICY)
    yield http
    http.close()


def _run_url(fake: FakeGitHub) -> str:
    return fake.raw_url("gh-pages", RUN_FILE)


def _attempts(fake: FakeGitHub) -> int:
    """Requests for the file itself, not the hops of a redirect loop."""
    return sum(1 for r in fake.requests if fg.LOOP_PARAM not in r.path)


def _gzip_bomb(size: int) -> bytes:
    return gzip.compress(b"0" * size, compresslevel=9)


# -- HttpClient: every kind ---------------------------------------------------------------

# kind -> (fault, what the final error says); each is injected on every request.
PERSISTENT = {
    "http-500": (fg.status(500), "HTTP 500"),
    "http-502": (fg.status(502), "HTTP 502"),
    "http-503": (fg.status(503, {"Retry-After": "bogus"}), "HTTP 503"),
    "connection-reset": (fg.reset(), "Error"),
    "stall-before-headers": (fg.stall(3), "Timeout"),
    "stall-after-headers": (fg.stall(3, after_headers=True), "Timeout"),
    "truncated-body": (fg.truncate(100), "RemoteProtocolError"),
    "content-length-too-long": (fg.wrong_length(+500), "RemoteProtocolError"),
    "html-instead-of-csv": (fg.html(), "HTML page"),
    "redirect-loop": (fg.redirect_loop(), "redirects"),
    "429-without-retry-after": (fg.status(429), "HTTP 429 rate limited"),
}


@pytest.mark.parametrize("kind", PERSISTENT)
def test_persistent_fault_is_retried_then_named(kind, fake, client):
    fault, says = PERSISTENT[kind]
    fake.inject("*", fault, times=None)
    url = _run_url(fake)
    with pytest.raises(UpstreamError) as err:
        client.get(url, what="gh-pages run b6ed735")
    message = str(err.value)
    assert message.startswith(f"gh-pages run b6ed735: giving up on {url} after {ATTEMPTS} attempts")
    assert says in message
    assert _attempts(fake) == ATTEMPTS


# kind -> (fault, times it is served): the attempt after them succeeds.
TRANSIENT = {
    "http-500-twice": (fg.status(500), 2),
    "connection-reset-once": (fg.reset(), 1),
    "stall-once": (fg.stall(3), 1),
    "truncated-once": (fg.truncate(10), 1),
    "html-once": (fg.html(), 1),
    "redirect-loop-once": (fg.redirect_loop(), 1),
    "403-rate-limit-reset-soon": (fg.rate_limited(), 1),
    "429-retry-after-1s": (fg.retry_after(1), 1),
}


@pytest.mark.parametrize("kind", TRANSIENT)
def test_transient_fault_is_retried_to_success(kind, fake, client):
    fault, times = TRANSIENT[kind]
    fake.inject("*", fault, times=times)
    got = client.get(_run_url(fake), what="gh-pages run b6ed735")
    expected = gzip.decompress((fake.mirror_dir / "gh-pages" / f"{RUN_FILE}.gz").read_bytes())
    assert got is not None and got.body == expected
    assert _attempts(fake) == times + 1


def test_backoff_grows_exponentially(fake):
    http = HttpClient(HttpPolicy(max_attempts=4, backoff_base=0.1, max_wait=5))
    fake.inject("*", fg.status(500), times=None)
    started = time.monotonic()
    with pytest.raises(UpstreamError):
        http.get(_run_url(fake), what="run")
    # 0.1 + 0.2 + 0.4 between four attempts.
    assert 0.65 <= time.monotonic() - started < 3


@pytest.mark.parametrize(
    "fault",
    [fg.rate_limited(reset_at=int(time.time()) + 3600), fg.retry_after(3600)],
    ids=["403-rate-limit-reset-in-an-hour", "429-retry-after-an-hour"],
)
def test_rate_limit_longer_than_max_wait_fails_fast(fault, fake, client):
    fake.inject("*", fault, times=None)
    url = _run_url(fake)
    started = time.monotonic()
    with pytest.raises(UpstreamError, match=re.escape(f"gh-pages run b6ed735: rate limited by {url} for")):
        client.get(url, what="gh-pages run b6ed735")
    assert time.monotonic() - started < 2
    assert _attempts(fake) == 1


def test_rate_limit_wait_honours_reset(fake, client):
    fake.inject("*", fg.retry_after(1), times=1)
    started = time.monotonic()
    assert client.get(_run_url(fake), what="run") is not None
    assert time.monotonic() - started >= 0.9


@pytest.mark.parametrize(
    "fault, says",
    [
        (fg.huge(CAP + 1), "declares"),
        (fg.huge(4 * CAP, chunked=True), "sent more than"),
        (fg.status(200, {"Content-Encoding": "gzip"}, _gzip_bomb(16 * 1024 * 1024)), "sent more than"),
    ],
    ids=["declared-over-cap", "chunked-over-cap", "gzip-encoded-bomb"],
)
def test_response_over_the_cap_fails_at_once(fault, says, fake, client):
    """Size is not transient: no retry. A gzip Content-Encoding is capped after decoding."""
    fake.inject("*", fault, times=None)
    url = _run_url(fake)
    with pytest.raises(UpstreamError, match=re.escape(f"gh-pages run b6ed735: {url} {says}")):
        client.get(url, what="gh-pages run b6ed735")
    assert _attempts(fake) == 1


def test_refusals_fail_at_once_and_404_is_none(fake, client):
    fake.inject("*", fg.status(403), times=1)
    with pytest.raises(UpstreamError, match="HTTP 403 from"):
        client.get(_run_url(fake), what="run")
    assert _attempts(fake) == 1
    assert client.get(fake.raw_url("gh-pages", "benchmarks/fffffff/benchmark.csv"), what="run") is None


def test_shorter_content_length_is_not_detectable_over_http(fake, client):
    """The one fault HTTP cannot see: a server announcing fewer bytes than the file has. The
    client reads what was announced; docs/RELIABILITY.md says what guards the warehouse then."""
    fake.inject("*", fg.wrong_length(-40), times=1)
    got = client.get(_run_url(fake), what="run")
    full = gzip.decompress((fake.mirror_dir / "gh-pages" / f"{RUN_FILE}.gz").read_bytes())
    assert got is not None and got.body == full[:-40]


# -- the whole refresh job -------------------------------------------------------------------

# Every kind once through the real job. Four kinds share a refresh, each on its own new
# revision, while the fifth new revision (gh-pages run c1bdc24) is served cleanly.
JOB_FAULTS = {
    "http-500": fg.status(500),
    "http-502": fg.status(502),
    "http-503": fg.status(503),
    "connection-reset": fg.reset(),
    "stall": fg.stall(4),
    "403-rate-limit-reset-in-an-hour": fg.rate_limited(reset_at=int(time.time()) + 3600),
    "429-retry-after-an-hour": fg.retry_after(3600),
    "truncated-body": fg.truncate(1000),
    "content-length-too-long": fg.wrong_length(+1000),
    "html-instead-of-csv": fg.html(),
    "redirect-loop": fg.redirect_loop(),
    "over-the-size-cap": fg.huge(2 * 1024 * 1024, chunked=True),
}
JOB_SETTINGS = {
    "LIGER_WAREHOUSE_TIMEOUT_SECONDS": "1",
    "LIGER_WAREHOUSE_MAX_ATTEMPTS": "3",
    "LIGER_WAREHOUSE_MAX_DOWNLOAD_MB": "1",
}
CLEAN_RUN = "c1bdc24"


@dataclass(frozen=True)
class Target:
    """One new revision of AFTER, as errors, the raw store and the summary name it."""

    commit: str
    label: str
    url_path: str


def _targets(mirror: Path) -> list[Target]:
    out = []
    for stem, n in ((DATA, 2), (CUTEDSL, 1), (CUTILE, 1)):
        for item in commits(mirror, stem)[:n]:
            sha = item["sha"]
            path = f"/raw/linkedin/Liger-Kernel/{sha}/benchmark/data/{stem}.csv"
            out.append(Target(sha, f"benchmark/data/{stem}.csv @ {sha[:12]}", path))
    return out


def _stored(root: Path) -> set[str]:
    """The revisions (commit or run) the raw store holds a snapshot of."""
    storage = Storage(root)
    return {json.loads(storage.read_text(k))["revision"]["commit"] for k in storage.list("raw/index")}


@dataclass
class GroupRun:
    root: Path
    before: Published
    targets: dict[str, Target]
    failures: list[str]
    summary: dict
    stored: set[str]
    recovered: dict


@pytest.fixture(scope="module")
def job_runs(base_warehouse, after_mirror, clean_after, tmp_path_factory) -> dict[str, GroupRun]:
    kinds = list(JOB_FAULTS)
    runs: dict[str, GroupRun] = {}
    for i in range(0, len(kinds), 4):
        group = kinds[i : i + 4]
        root = copy_warehouse(base_warehouse, tmp_path_factory.mktemp("faults") / "warehouse")
        targets = dict(zip(group, _targets(after_mirror), strict=False))
        with FakeGitHub(after_mirror) as fake:
            for kind, target in targets.items():
                fake.inject(target.url_path + "*", JOB_FAULTS[kind], times=None)
            before = published(root)
            done = refresh(root, fake, **JOB_SETTINGS)
            assert done.result.success, step_failures(done.result)
            failures = done.result.output_for_node("upstream_snapshots").failures
            stored, summarized = _stored(root), summary(root)
            assert_still_there(root, before)
            assert_raw_store_sound(root)
            fake.clear_faults()
            assert refresh(root, fake).result.success
        run = GroupRun(root, before, targets, failures, summarized, stored, contents(root))
        runs.update(dict.fromkeys(group, run))
    return runs


@pytest.mark.parametrize("kind", JOB_FAULTS)
def test_fault_in_a_refresh_defers_its_revision_and_keeps_the_rest(kind, job_runs, clean_after):
    run = job_runs[kind]
    target = run.targets[kind]
    (message,) = [f for f in run.failures if target.commit[:12] in f]
    assert message.startswith(target.label + ": ")
    assert "http://127.0.0.1:" in message and target.url_path in message  # names the URL
    assert target.commit not in run.stored, "a snapshot of the failed download was stored"
    assert target.label in run.summary["deferred"]
    assert CLEAN_RUN in run.stored and run.summary["revisions_ingested"] == 5 - len(run.targets)
    # The next refresh picks up what was deferred: the same warehouse as a fault-free refresh.
    assert run.recovered == clean_after


def test_rate_limited_listing_fails_the_refresh_fast_and_changes_nothing(base_copy, after_mirror):
    with FakeGitHub(after_mirror) as fake:
        fake.inject("/api/v3/*", fg.rate_limited(reset_at=int(time.time()) + 3600), times=None)
        before = published(base_copy)
        started = time.monotonic()
        done = refresh(base_copy, fake)
    assert not done.result.success
    assert time.monotonic() - started < 30
    (message,) = step_failures(done.result)
    assert "list of commits for benchmark/data/" in message and "rate limited by http://127.0.0.1:" in message
    assert "GITHUB_TOKEN" in message  # says what to do about it
    assert published(base_copy) == before


def test_transient_faults_in_a_refresh_cost_nothing(base_copy, after_mirror, clean_after):
    """Faults that clear within the retry budget: the refresh is as if they never happened."""
    faults = [(fg.status(500), 2), (fg.rate_limited(), 1), (fg.retry_after(1), 1), (fg.redirect_loop(), 1)]
    with FakeGitHub(after_mirror) as fake:
        for (fault, times), target in zip(faults, _targets(after_mirror), strict=True):
            fake.inject(target.url_path + "*", fault, times=times)
        done = refresh(base_copy, fake)
    assert done.result.success
    assert done.result.output_for_node("upstream_snapshots").failures == []
    assert contents(base_copy) == clean_after
