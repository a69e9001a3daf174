"""Security: the token stays secret, upstreams are http(s) or a local directory, names from
upstream are checked before they touch a path or URL, SQL parameters are bound, and every
download and decompression has a size cap.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.model.revisions import GH_PAGES, RevisionRef
from liger_warehouse.model.versions import is_valid_run_name
from liger_warehouse.store.raw import RawStore, SnapshotTooLarge, bounded_gunzip
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.http import HttpClient, UpstreamError
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream
from liger_warehouse.upstream.sources import check_path, run_path
from tests import fake_github as fg
from tests.conftest import refresh
from tests.fake_github import FakeGitHub
from tests.reliability.conftest import github_env
from tests.reliability.published import cli_env, cli_refresh, dagster_home, step_failures
from tests.reliability.upstreams import DATA, commits

TOKEN = "ghp_" + "S3cr3tT0k3nThatMustNeverLeak" * 2


def _grep_tree(root: Path, secret: bytes) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``secret``."""
    return [p for p in root.rglob("*") if p.is_file() and secret in p.read_bytes()]


# -- GITHUB_TOKEN -----------------------------------------------------------------------------


def test_token_is_sent_and_never_leaks_from_an_in_process_run(base_copy, after_mirror, caplog, capfd):
    caplog.set_level("DEBUG")
    newest = commits(after_mirror, DATA)[0]["sha"]
    with FakeGitHub(after_mirror, require_token=TOKEN) as fake:
        fake.inject(f"/raw/*/{newest}/*", fg.status(500), times=None)  # an error path too
        done = refresh(base_copy, fake, GITHUB_TOKEN=TOKEN)
        sent = [r.headers.get("authorization") for r in fake.requests if r.host == "api"]
    assert done.result.success  # the API refuses every request without the token
    assert sent and all(h == f"Bearer {TOKEN}" for h in sent)
    failures = done.result.output_for_node("upstream_snapshots").failures
    assert len(failures) == 1
    out, err = capfd.readouterr()
    texts = {
        "logs": caplog.text,
        "stdout": out,
        "stderr": err,
        "exceptions": "\n".join(failures),
        "events and metadata": "\n".join(dg.serialize_value(e) for e in done.result.all_events),
        "run and its config": dg.serialize_value(done.result.dagster_run),
    }
    assert [name for name, text in texts.items() if TOKEN in text] == []
    assert _grep_tree(base_copy, TOKEN.encode()) == []


def test_token_never_leaks_from_the_cli_or_the_dagster_instance(base_copy, after_mirror, tmp_path):
    home = dagster_home(tmp_path / "dagster")
    newest = commits(after_mirror, DATA)[0]["sha"]
    with FakeGitHub(after_mirror, require_token=TOKEN) as fake:
        fake.inject(f"/raw/*/{newest}/*", fg.status(500), times=None)
        done = cli_refresh(base_copy, cli_env(home, **github_env(fake), GITHUB_TOKEN=TOKEN))
    assert done.returncode == 0, done.stderr[-3000:]
    assert TOKEN not in done.stdout and TOKEN not in done.stderr
    assert _grep_tree(home, TOKEN.encode()) == []  # run storage, event log, compute logs
    assert _grep_tree(base_copy, TOKEN.encode()) == []


def test_a_refused_token_is_not_in_the_error(base_copy, after_mirror):
    with FakeGitHub(after_mirror, require_token="the-right-token") as fake:
        done = refresh(base_copy, fake, GITHUB_TOKEN=TOKEN)
    assert not done.result.success
    (message,) = step_failures(done.result)
    assert "HTTP 401 from http://127.0.0.1:" in message and TOKEN not in message
    assert TOKEN not in repr(UpstreamSettings(token=TOKEN))


def _github(fake: FakeGitHub, tmp_path: Path):
    settings = UpstreamSettings(api_base=fake.api_base, raw_base=fake.raw_base, token=TOKEN)
    return open_upstream(settings, Storage(tmp_path / "state"))


def test_a_next_page_on_another_host_is_refused(before_mirror, tmp_path):
    with FakeGitHub(before_mirror) as fake, FakeGitHub(before_mirror) as other:
        link = f'<{other.commits_url()}?path=x&page=2>; rel="next"'
        fake.inject("/api/v3/*", fg.status(200, {"Link": link, "Content-Type": "application/json"}, b"[]"), times=1)
        with pytest.raises(UpstreamError, match="refusing a next page on another host"):
            _github(fake, tmp_path).list()
        assert other.requests == []


def test_a_redirect_to_another_host_drops_the_token(before_mirror, tmp_path):
    with FakeGitHub(before_mirror) as fake, FakeGitHub(before_mirror) as other:
        run = "b6ed735"
        target = other.raw_url(GH_PAGES, run_path(run))
        fake.inject("/raw/*", fg.status(302, {"Location": target}), times=1)
        ref = RevisionRef(GH_PAGES, run_path(run), run, run=run)
        assert _github(fake, tmp_path).fetch(ref).startswith(b"kernel_name,")
        assert [r.headers.get("authorization") for r in other.requests] == [None]


# -- where upstream may be --------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, says",
    [
        ("file:///etc", "only github:OWNER/REPO or a local directory"),
        ("ftp://example.com/liger", "only github:OWNER/REPO or a local directory"),
        ("https://github.com/linkedin/Liger-Kernel", "only github:OWNER/REPO or a local directory"),
        ("github:linkedin/Liger-Kernel/../../x", "expected github:OWNER/REPO"),
        ("github:../etc", "expected github:OWNER/REPO"),
        ("/no/such/mirror", "no such directory"),
    ],
)
def test_upstream_is_github_or_a_local_directory(spec, says, tmp_path):
    with pytest.raises(UpstreamError, match=says):
        open_upstream(UpstreamSettings(upstream=spec), Storage(tmp_path))


@pytest.mark.parametrize("base", ["file:///etc", "ftp://example.com", "javascript:alert(1)", "//evil.example"])
@pytest.mark.parametrize("which", ["api_base", "raw_base"])
def test_github_bases_must_be_http_or_https(base, which, tmp_path):
    with pytest.raises(UpstreamError, match="must be http or https"):
        open_upstream(UpstreamSettings(**{which: base}), Storage(tmp_path))


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x.csv", "gopher://x"])
def test_the_http_client_refuses_other_schemes(url):
    with pytest.raises(UpstreamError, match="refusing non-HTTP URL"):
        HttpClient().get(url, what="x")


@pytest.mark.parametrize(
    "path", ["../x.csv", "/etc/passwd", "a//b.csv", "a/./b.csv", "a/../../b.csv", "a\\b.csv", "a/%2e%2e/b", "", "a/b\0"]
)
def test_unsafe_paths_are_refused(path):
    with pytest.raises(UpstreamError, match="refusing unsafe upstream path"):
        check_path(path)
    assert check_path("benchmark/data/all_benchmark_data.csv")


@pytest.mark.parametrize(
    "run", ["..", "../x", "/etc/passwd", "0a62700/../x", "0a62700-v../..", "0a62700\n", "0A62700", "0a6270"]
)
def test_unsafe_run_names_are_refused(run):
    assert not is_valid_run_name(run)
    assert is_valid_run_name("0a62700-v0.6.4")


# -- SQL --------------------------------------------------------------------------------------

HOSTILE = ["x' or '1'='1", "'; drop view fact_result; --", 'x") or 1=1 --', "%' --"]


def _cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=True)


def _sha(root: Path) -> str:
    """One hash of the lake's catalog and every data file, read as bytes, never opened as a lake."""
    digest = hashlib.sha256()
    for path in sorted([root / "catalog.sqlite", *(root / "lake").rglob("*")]):
        if path.is_file():
            digest.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def _sql_errors(text: str) -> list[str]:
    return [e for e in ("Parser Error", "Binder Error", "Catalog Error", "Traceback") if e in text]


@pytest.mark.parametrize("value", HOSTILE)
def test_cli_parameters_are_bound_not_formatted(value, base_copy):
    """Values that would break out of a quoted literal are just unknown names."""
    w = str(base_copy)
    before = _sha(base_copy)
    for args in (
        ["regressions", "--base", value, "--head", "0.2.1", "--warehouse", w],
        ["regressions", "--base", "0.2.1", "--head", "0.2.1", "--kernel", value, "--warehouse", w],
        ["regressions", "--base", "0.2.1", "--head", "0.2.1", "--gpu", value, "--warehouse", w],
        ["export", "liger-csv", "--run", value, "--out", "-", "--warehouse", w],
        ["export", "liger-csv", "--path", value, "--out", "-", "--warehouse", w],
    ):
        result = _cli(*args)
        assert result.exit_code in (1, 2), (args, result.output)
        assert _sql_errors(result.output + repr(result.exception)) == [], (args, result.output)
    assert _sha(base_copy) == before


def test_the_sql_command_is_read_only(base_copy):
    before = _sha(base_copy)
    result = _cli("sql", "drop view fact_result", "--warehouse", str(base_copy))
    assert result.exit_code != 0
    assert "read-only" in (result.output + repr(result.exception)).lower()
    assert _sha(base_copy) == before


def test_views_are_built_safely_from_a_root_with_a_quote(before_mirror, tmp_path):
    """The catalog and data paths are quoted into ATTACH: a root named with a quote must still work."""
    root = tmp_path / "it's a warehouse"
    assert refresh(root, upstream=str(before_mirror)).result.success
    with read_lake(Lake.of(str(root))) as con:
        assert con.execute("select count(*) from fact_result").fetchone()[0] > 0


# -- size caps --------------------------------------------------------------------------------


def test_decompression_is_capped_everywhere(tmp_path):
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))
    with pytest.raises(SnapshotTooLarge, match="decompresses to more than 1048576 bytes"):
        bounded_gunzip(bomb, 1024 * 1024, "bomb")
    # A raw snapshot is decompressed under the same kind of cap when it is read back.
    small = RawStore(Storage(tmp_path), max_bytes=1024 * 1024)
    ref = RevisionRef(GH_PAGES, run_path("b6ed735"), "b6ed735", run="b6ed735")
    content = RawStore(Storage(tmp_path)).put(ref, b"\0" * (2 * 1024 * 1024))
    with pytest.raises(SnapshotTooLarge):
        small.get(content)
