"""Tests of the fake GitHub itself, against the fixture cut of the upstream mirror; paging, which
needs more commits than the cut keeps, against the whole snapshot (the larger tier)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import MIRROR, require_full_mirror
from tests.fake_github import (
    LOOP_PARAM,
    FakeGitHub,
    html,
    huge,
    rate_limited,
    redirect_loop,
    reset,
    retry_after,
    stall,
    status,
    truncate,
    wrong_length,
)

STEM = "all_benchmark_data"
CSV_PATH = f"benchmark/data/{STEM}.csv"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(MIRROR) as fake:
        yield fake


@pytest.fixture
def full_gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(require_full_mirror()) as fake:
        yield fake


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def mirror_commits(stem: str = STEM, mirror: Path = MIRROR) -> list[dict]:
    return json.loads((mirror / "commits" / f"{stem}.json").read_text())


def first_sha(stem: str = STEM) -> str:
    return mirror_commits(stem)[0]["sha"]


def raw_csv_url(gh: FakeGitHub, sha: str, stem: str = STEM) -> str:
    return gh.raw_url(sha, f"benchmark/data/{stem}.csv")


def raw_get(gh: FakeGitHub, target: str) -> bytes:
    """Send `target` verbatim; httpx would normalise away the `..` we want to test."""
    with socket.create_connection(("127.0.0.1", gh.port), timeout=5) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


# ------------------------------------------------------------------------------- API


def test_pagination_walks_every_commit_via_link_next(full_gh: FakeGitHub, client: httpx.Client) -> None:
    gh = full_gh
    expected = mirror_commits(mirror=gh.mirror_dir)
    assert len(expected) > 20  # the walk below must really span several pages
    url: str | None = gh.commits_url()
    params: dict[str, str | int] | None = {"path": CSV_PATH, "per_page": 10}
    got: list[dict] = []
    rel_sets: list[set[str]] = []
    while url:
        r = client.get(url, params=params)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/json")
        got += r.json()
        rel_sets.append(set(r.links))
        nxt = r.links.get("next")
        url, params = (nxt["url"], None) if nxt else (None, None)
        if nxt:
            # Absolute, and the caller's other params survive.
            assert nxt["url"].startswith(gh.api_base)
            assert "per_page=10" in nxt["url"] and "path=benchmark%2Fdata%2F" in nxt["url"]
    assert got == expected
    pages = -(-len(expected) // 10)
    assert len(rel_sets) == pages
    assert rel_sets[0] == {"next", "last"}
    assert all(s == {"prev", "next", "last", "first"} for s in rel_sets[1:-1])
    assert rel_sets[-1] == {"prev", "first"}


def test_per_page_default_clamp_and_edges(full_gh: FakeGitHub, client: httpx.Client) -> None:
    gh = full_gh
    expected = mirror_commits(mirror=gh.mirror_dir)
    r = client.get(gh.commits_url(), params={"path": CSV_PATH})
    assert r.json() == expected[:30]
    assert r.links["last"]["url"].endswith("page=2")
    # per_page above GitHub's cap of 100 is clamped, so everything fits on one page.
    r = client.get(gh.commits_url(), params={"path": CSV_PATH, "per_page": 500})
    assert r.json() == expected and "link" not in r.headers
    r = client.get(gh.commits_url(), params={"path": CSV_PATH, "per_page": 10, "page": 99})
    assert r.json() == []
    r = client.get(gh.commits_url(), params={"path": "benchmark/data/nope.csv"})
    assert r.status_code == 200 and r.json() == []
    r = client.get(f"{gh.api_base}/repos/someone/else/commits", params={"path": CSV_PATH})
    assert r.status_code == 404 and r.json()["message"] == "Not Found"


def test_per_page_max_and_since_until(client: httpx.Client) -> None:
    mirror = require_full_mirror()  # more than 5 commits, so the clamp shows
    expected = mirror_commits(mirror=mirror)
    with FakeGitHub(mirror, per_page_max=5) as gh:
        r = client.get(gh.commits_url(), params={"path": CSV_PATH, "per_page": 100})
        assert r.json() == expected[:5]
        cut = expected[3]["commit"]["committer"]["date"]
        r = client.get(gh.commits_url(), params={"path": CSV_PATH, "since": cut})
        assert r.json() == [c for c in expected[:5] if c["commit"]["committer"]["date"] >= cut]


def test_etag_304_and_rate_limit_headers(gh: FakeGitHub, client: httpx.Client) -> None:
    params = {"path": CSV_PATH, "per_page": 10}
    r1 = client.get(gh.commits_url(), params=params)
    etag = r1.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    remaining = int(r1.headers["x-ratelimit-remaining"])
    assert int(r1.headers["x-ratelimit-limit"]) == 5000
    assert int(r1.headers["x-ratelimit-reset"]) > time.time()
    r2 = client.get(gh.commits_url(), params=params, headers={"If-None-Match": etag})
    assert r2.status_code == 304 and r2.content == b""
    # Conditional hits do not spend the budget, as on GitHub.
    assert int(r2.headers["x-ratelimit-remaining"]) == remaining
    r3 = client.get(gh.commits_url(), params={**params, "page": 2}, headers={"If-None-Match": etag})
    assert r3.status_code == 200 and r3.headers["etag"] != etag


def test_rate_limit_budget_runs_out(client: httpx.Client) -> None:
    with FakeGitHub(MIRROR, rate_limit=2) as gh:
        codes = [client.get(gh.commits_url(), params={"path": CSV_PATH}).status_code for _ in "abc"]
        assert codes == [200, 200, 403]


def test_require_token(client: httpx.Client) -> None:
    with FakeGitHub(MIRROR, require_token="s3cret") as gh:
        params = {"path": CSV_PATH}
        assert client.get(gh.commits_url(), params=params).status_code == 401
        bad = {"Authorization": "Bearer nope"}
        assert client.get(gh.commits_url(), params=params, headers=bad).status_code == 401
        for auth in ("Bearer s3cret", "token s3cret"):
            r = client.get(gh.commits_url(), params=params, headers={"Authorization": auth})
            assert r.status_code == 200
        # The raw host never asks for the token; the log shows what each request carried.
        assert client.get(gh.raw_url("gh-pages", "benchmarks/commits.txt")).status_code == 200
        log = gh.requests
        assert log[-2].headers["authorization"] == "token s3cret"
        assert "authorization" not in log[-1].headers


# ------------------------------------------------------------------------------- raw host


def test_raw_content_is_the_gunzipped_mirror_file(gh: FakeGitHub, client: httpx.Client) -> None:
    for stem in ("all_benchmark_data", "all_benchmark_data_cutile", "all_benchmark_data_cutedsl"):
        sha = first_sha(stem)
        r = client.get(raw_csv_url(gh, sha, stem))
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/plain")
        gz = MIRROR / "raw" / sha / "benchmark" / "data" / f"{stem}.csv.gz"
        assert r.content == gzip.decompress(gz.read_bytes())
    pages = MIRROR / "gh-pages" / "benchmarks"
    run = pages.joinpath("commits.txt").read_text().split()[-1]
    r = client.get(gh.raw_url("gh-pages", f"benchmarks/{run}/benchmark.csv"))
    assert r.content == gzip.decompress((pages / run / "benchmark.csv.gz").read_bytes())
    for name in ("commits.txt", "golden_commits.json"):
        r = client.get(gh.raw_url("gh-pages", f"benchmarks/{name}"))
        assert r.content == (pages / name).read_bytes()


def test_raw_etag_and_not_found(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    etag = client.get(url).headers["etag"]
    r = client.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.content == b""
    for missing in (
        raw_csv_url(gh, "0" * 40),
        raw_csv_url(gh, first_sha()) + ".gz",
        gh.raw_url("gh-pages", "benchmarks/nope/benchmark.csv"),
        f"{gh.raw_base}/other/repo/gh-pages/benchmarks/commits.txt",
    ):
        r = client.get(missing)
        assert (r.status_code, r.content) == (404, b"404: Not Found"), missing


def test_raw_never_leaves_the_mirror(gh: FakeGitHub) -> None:
    prefix = "/raw/linkedin/Liger-Kernel/gh-pages"
    for target in (
        f"{prefix}/../../commits/{STEM}.json",
        f"{prefix}/%2e%2e/%2e%2e/commits/{STEM}.json",
        f"{prefix}/..%2f..%2fcommits%2f{STEM}.json",
        f"{prefix}/benchmarks/../../../../../etc/passwd",
    ):
        response = raw_get(gh, target)
        assert response.startswith(b"HTTP/1.1 404"), target
        assert response.endswith(b"404: Not Found")


def test_tmp_copy_of_mirror_and_replace(tmp_path: Path, client: httpx.Client) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(MIRROR / "gh-pages", mirror / "gh-pages")
    (mirror / "commits").mkdir()
    fake_commit = {"sha": "f" * 40, "commit": {"committer": {"date": "2030-01-01T00:00:00Z"}}}
    (mirror / "commits" / f"{STEM}.json").write_text(json.dumps([fake_commit]))
    with FakeGitHub(mirror) as gh:
        assert client.get(gh.commits_url(), params={"path": CSV_PATH}).json() == [fake_commit]
        url = gh.raw_url("gh-pages", "benchmarks/commits.txt")
        gh.replace(url, b"not,a\nbenchmark\n")
        r = client.get(url)
        assert r.content == b"not,a\nbenchmark\n" and r.headers["etag"]
        gh.replace(url, None)
        assert client.get(url).status_code == 404


# ------------------------------------------------------------------------------- log


def test_request_log(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    body = client.get(url).content
    first = gh.requests[-1]
    client.get(url, headers={"If-None-Match": client.get(url).headers["etag"]})
    client.get(gh.commits_url(), params={"path": CSV_PATH})
    log = gh.requests
    assert [r.status for r in log] == [200, 200, 304, 200]
    assert first.method == "GET" and first.path.endswith(f"/{STEM}.csv") and first.host == "raw"
    assert first.body_bytes == len(body) and "user-agent" in first.headers
    assert [r.host for r in gh.content_requests()] == ["raw", "raw"]
    assert gh.bytes_sent() == 2 * len(body) + log[-1].body_bytes
    gh.clear_log()
    assert gh.requests == [] and gh.bytes_sent() == 0


# ------------------------------------------------------------------------------- faults


def test_status_faults_apply_then_resume(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    gh.inject(f"*/{STEM}.csv", status(503), times=2)
    assert [client.get(url).status_code for _ in range(3)] == [503, 503, 200]
    assert [r.fault for r in gh.requests] == ["status", "status", None]

    gh.inject(re.compile(r"/commits\?"), rate_limited(reset_at=1_900_000_000))
    r = client.get(gh.commits_url(), params={"path": CSV_PATH})
    assert r.status_code == 403
    assert r.headers["x-ratelimit-remaining"] == "0"
    assert r.headers["x-ratelimit-reset"] == "1900000000"

    gh.inject("*commits*", retry_after(7))
    r = client.get(gh.commits_url(), params={"path": CSV_PATH})
    assert (r.status_code, r.headers["retry-after"]) == (429, "7")
    assert client.get(gh.commits_url(), params={"path": CSV_PATH}).status_code == 200


def test_times_none_is_forever_until_cleared(gh: FakeGitHub, client: httpx.Client) -> None:
    url = gh.raw_url("gh-pages", "benchmarks/commits.txt")
    gh.inject("*commits.txt", status(502, body=b"bad gateway"), times=None)
    assert {client.get(url).status_code for _ in range(4)} == {502}
    gh.clear_faults()
    assert client.get(url).status_code == 200


def test_reset(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    gh.inject("*", reset())
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        client.get(url)
    assert gh.requests[-1].status == 0
    assert client.get(url).status_code == 200


def test_stall_before_response(gh: FakeGitHub) -> None:
    gh.inject("*", stall(5))
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(raw_csv_url(gh, first_sha()), timeout=0.3)
    assert time.monotonic() - started < 2


def test_stall_after_headers(gh: FakeGitHub) -> None:
    gh.inject("*", stall(5, after_headers=True))
    with (
        httpx.Client(timeout=0.3) as c,
        c.stream("GET", raw_csv_url(gh, first_sha())) as r,
    ):
        assert r.status_code == 200  # the headers arrived promptly
        with pytest.raises(httpx.ReadTimeout):
            r.read()


def test_truncate_and_wrong_length(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    full = client.get(url).content
    gh.inject("*", truncate(1000))
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(url)
    assert gh.requests[-1].body_bytes == 1000
    gh.inject("*", wrong_length(+100))
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(url)
    # A too-small Content-Length silently shortens the body for a compliant client.
    gh.inject("*", wrong_length(-10))
    assert client.get(url).content == full[:-10]
    assert client.get(url).content == full


def test_html_error_page(gh: FakeGitHub, client: httpx.Client) -> None:
    gh.inject("*", html())
    r = client.get(raw_csv_url(gh, first_sha()))
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.text.lstrip().lower().startswith("<!doctype html")


def test_redirect_loop(gh: FakeGitHub, client: httpx.Client) -> None:
    url = raw_csv_url(gh, first_sha())
    gh.inject("*", redirect_loop())
    with pytest.raises(httpx.TooManyRedirects):
        client.get(url, follow_redirects=True)
    hops = gh.requests
    assert len(hops) > 2 and all(r.status == 302 for r in hops)
    assert LOOP_PARAM in hops[-1].path
    # times=1 counted the attempt, not the hops: a retry is served normally.
    assert client.get(url, follow_redirects=True).status_code == 200


@pytest.mark.parametrize("chunked", [False, True])
def test_huge(gh: FakeGitHub, client: httpx.Client, chunked: bool) -> None:
    size = 3_000_000
    gh.inject("*", huge(size, chunked=chunked))
    with client.stream("GET", raw_csv_url(gh, first_sha())) as r:
        assert ("content-length" in r.headers) is not chunked
        received = 0
        for chunk in r.iter_raw():
            received += len(chunk)
    assert received == size
    assert gh.requests[-1].body_bytes == size


def test_huge_abandoned_by_client(gh: FakeGitHub, client: httpx.Client) -> None:
    gh.inject("*", huge(200_000_000))
    with client.stream("GET", raw_csv_url(gh, first_sha())) as r:
        for _ in r.iter_raw():
            break  # a client enforcing a size cap hangs up early
    # The fake notices the hang-up and stops sending long before the announced size.
    deadline = time.monotonic() + 3
    sent = -1
    while time.monotonic() < deadline and sent != gh.requests[-1].body_bytes:
        sent = gh.requests[-1].body_bytes
        time.sleep(0.05)
    assert 0 < sent < 50_000_000
