"""An ``s3://`` warehouse root against a loopback S3 server (moto's server mode).

The real refresh job writes raw snapshots, Parquet parts, manifests, the CURRENT pointer,
liger.duckdb and the report into a bucket; the views are then read through the project's reader
(``liger_warehouse.serve.database.connect``: the s3fs filesystem registered with DuckDB, no extension
download) and must count exactly what the local warehouse built from the same mirror counts.
Then a real ``liger-warehouse refresh`` is SIGKILLed at the publish switch and after it: readers
keep seeing one whole generation, every object it references is there, and the next refresh
recovers.
"""

from __future__ import annotations

import http.client
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.audit import checks
from liger_warehouse.cli import app
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.serve.database import DATABASE, connect, fetch_database, open_duckdb
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.storage import Storage, WriteConflict
from tests.conftest import Refreshed, env, refresh
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views
from tests.reliability.published import cli_env, cli_refresh, cli_script, dagster_home, step_failures
from tests.reliability.upstreams import AFTER, BEFORE, make_mirror
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
BUCKET = "liger-warehouse"
VIEWS = ("version_history", "speedup_history", "regressions", "change_points")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A moto S3 server on loopback with one bucket; yields the environment that points at it."""
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    settings = {
        "LIGER_WAREHOUSE_S3_ENDPOINT": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        # Never ask an instance-metadata address for credentials or a region.
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_PROFILE": None,
        "AWS_ENDPOINT_URL": None,
        "AWS_ENDPOINT_URL_S3": None,
        "LIGER_WAREHOUSE_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
    }
    try:
        with env(**settings):
            Storage(f"s3://{BUCKET}").fs.mkdir(BUCKET)
            yield {k: v for k, v in settings.items() if v is not None}
    finally:
        server.stop()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHub]:
    """A cut of the mirror (every kind of data, a fraction of the rows) over loopback HTTP."""
    with FakeGitHub(small_mirror(tmp_path_factory.mktemp("upstream") / "liger-kernel")) as fake:
        yield fake


@pytest.fixture(scope="module")
def s3_warehouse(s3, upstream: FakeGitHub) -> str:
    """``upstream`` refreshed into ``s3://<bucket>/warehouse``, then its outputs written there."""
    root = f"s3://{BUCKET}/warehouse"
    built = refresh(root, upstream)
    assert built.result.success, step_failures(built.result)
    outputs = refresh(root, upstream, job="outputs")
    assert outputs.result.success, step_failures(outputs.result)
    return root


@pytest.fixture(scope="module")
def local_warehouse(upstream: FakeGitHub, tmp_path_factory: pytest.TempPathFactory) -> Refreshed:
    """The same upstream refreshed into a local directory: what the bucket must count."""
    built = refresh(tmp_path_factory.mktemp("local") / "warehouse", upstream)
    assert built.result.success, step_failures(built.result)
    return built


def _local_counts(db: Path, names) -> dict[str, int]:
    with open_views(db) as con:
        return {n: con.execute(f"select count(*) from {n}").fetchone()[0] for n in names}


def _counts(root: str, names) -> dict[str, int]:
    with connect(Storage(root)) as con:
        return {n: con.execute(f"select count(*) from {n}").fetchone()[0] for n in names}


def test_parts_and_snapshots_are_in_the_bucket(s3_warehouse, local_warehouse):
    storage = Storage(s3_warehouse)
    keys = storage.list("")
    local = Storage(local_warehouse.root)
    raw = [k for k in keys if k.startswith("raw/sha256/")]
    assert raw and len(raw) == len(local.list("raw/sha256"))
    gen = GenerationStore(storage).current()
    referenced = {p.file for parts in gen.tables.values() for p in parts}
    assert referenced and referenced <= set(keys), "a part the published generation lists is missing"
    assert {"CURRENT", DATABASE, f"generations/{gen.id}.json", f"reports/{gen.id}/index.html"} <= set(keys)
    assert not [k for k in keys if ".tmp-" in k]


def test_views_read_the_bucket_and_count_like_the_local_warehouse(s3_warehouse, local_warehouse):
    names = (*SCHEMAS, *VIEWS)
    assert _counts(s3_warehouse, names) == _local_counts(local_warehouse.database, names)
    with connect(Storage(s3_warehouse)) as con:
        view_sql = con.execute("select sql from duckdb_views() where view_name = 'fact_result'").fetchone()[0]
        # Parts are named relative to the root, which is the bucket's: the bytes come from it
        # through the registered s3fs filesystem, not an extension.
        assert "warehouse_files(list_value('tables/fact_result/" in view_sql
        resolved = con.execute("select warehouse_files(['tables/fact_result/x.parquet'])").fetchone()[0]
        assert resolved == [f"s3://{BUCKET}/warehouse/tables/fact_result/x.parquet"]
    # The same reader before its lock-down (which forbids listing extensions): no httpfs loaded.
    storage = Storage(s3_warehouse)
    with open_duckdb(storage, str(fetch_database(storage)), read_only=True) as con:
        assert con.execute("select count(*) from fact_result").fetchone()[0] > 0
        assert con.execute(
            "select count(*) from duckdb_extensions() where extension_name = 'httpfs' and loaded"
        ).fetchone() == (0,)


def test_cli_sql_reads_an_s3_warehouse(s3_warehouse, local_warehouse):
    expected = _local_counts(local_warehouse.database, ["fact_result"])["fact_result"]
    with env(LIGER_WAREHOUSE_DIR=None):
        result = CliRunner().invoke(
            app, ["sql", "--warehouse", s3_warehouse, "--format", "csv", "select count(*) as n from fact_result"]
        )
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["n", str(expected)]


def _objects(storage: Storage) -> dict[str, tuple]:
    """Every object under the root with its ETag and size: a write of any of them shows."""
    found = storage.fs.find(storage.root, detail=True)
    return {key: (info.get("ETag"), info["size"]) for key, info in found.items()}


def test_cli_sql_on_an_s3_warehouse_writes_nothing_and_reads_only_its_root(s3_warehouse):
    storage = Storage(s3_warehouse)
    Storage(f"s3://{BUCKET}/elsewhere").write_text("secret.txt", "not this warehouse's")
    part = GenerationStore(storage).current().parts("fact_result")[0].file
    before = _objects(storage)
    refused = {
        f"copy (select 1 as a) to '{s3_warehouse}/{part}' (format parquet)": "is not a query",
        f"copy (select 'x' as a) to '{s3_warehouse}/CURRENT' (format csv, header false)": "is not a query",
        f"select content from read_text('s3://{BUCKET}/elsewhere/secret.txt')": "reads only the warehouse",
        "select content from read_text('/etc/passwd')": "reads only the warehouse",
    }
    with env(LIGER_WAREHOUSE_DIR=None):
        for sql, message in refused.items():
            result = CliRunner().invoke(app, ["sql", "--warehouse", s3_warehouse, sql])
            assert result.exit_code == 1, result.output
            # The CLI's error: what failed, then what to do.
            assert result.output.count("\n") == 2 and message in result.output, result.output
    assert _objects(storage) == before


@dataclass
class Killed:
    root: str
    before: str
    returncode: int


def _referenced(storage: Storage, gen_id: str) -> set[str]:
    gen = GenerationStore(storage).load(gen_id)
    return {f"generations/{gen_id}.json", *(p.file for parts in gen.tables.values() for p in parts)}


def _generation_in_views(root: str) -> str:
    with connect(Storage(root)) as con:
        return con.execute("select generation_id from warehouse_generation").fetchone()[0]


@pytest.fixture(scope="module")
def killed(s3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Killed], FakeGitHub]]:
    """Per failpoint: a small S3 warehouse published from BEFORE, then a CLI refresh against
    AFTER killed at that point."""
    tmp = tmp_path_factory.mktemp("s3-crash")
    before_mirror = make_mirror(tmp / "before", BEFORE)
    with FakeGitHub(make_mirror(tmp / "after", AFTER)) as after:

        def kill(point: str) -> Killed:
            root = f"s3://{BUCKET}/crash-{point.replace(':', '-')}"
            assert refresh(root, upstream=str(before_mirror)).result.success
            before = GenerationStore(Storage(root)).current_id()
            home = dagster_home(tmp / f"dagster-{point}")
            settings = {
                **s3,
                "LIGER_WAREHOUSE_UPSTREAM": "github:linkedin/Liger-Kernel",
                "LIGER_WAREHOUSE_GITHUB_API": after.api_base,
                "LIGER_WAREHOUSE_GITHUB_RAW": after.raw_base,
                "LIGER_WAREHOUSE_FAILPOINT": point,
            }
            proc = cli_refresh(root, cli_env(home, **settings), timeout=300)
            return Killed(root, before, proc.returncode)

        points = ("publish", "database-replace")
        yield dict(zip(points, map(kill, points), strict=True)), after


def test_killed_at_the_switch_keeps_the_old_generation_whole(killed):
    runs, after = killed
    run = runs["publish"]
    assert run.returncode == -signal.SIGKILL
    storage = Storage(run.root)
    gens = GenerationStore(storage)
    assert gens.current_id() == run.before, "CURRENT moved although the process died before the PUT"
    staged = [k for k in storage.list("generations") if run.before not in k]
    assert staged, "the killed refresh should have staged a generation"
    assert _referenced(storage, run.before) <= set(storage.list(""))
    assert _generation_in_views(run.root) == run.before
    _recovers(run, after)


def test_killed_after_the_switch_readers_see_one_whole_generation(killed):
    runs, after = killed
    run = runs["database-replace"]
    assert run.returncode == -signal.SIGKILL
    storage = Storage(run.root)
    current = GenerationStore(storage).current_id()
    assert current != run.before, "the switch had happened before the kill"
    keys = set(storage.list(""))
    # The liger.duckdb in the bucket still shows the old generation, whose parts are all there.
    assert _generation_in_views(run.root) == run.before
    assert _referenced(storage, run.before) | _referenced(storage, current) <= keys
    _recovers(run, after)


def _recovers(run: Killed, after: FakeGitHub) -> None:
    """The next refresh succeeds and readers see the newest generation."""
    again = refresh(run.root, after)
    assert again.result.success
    gens = GenerationStore(Storage(run.root))
    assert gens.load(gens.current_id()).parent is not None
    assert _generation_in_views(run.root) == gens.current_id()
    assert not [k for k in Storage(run.root).list("") if ".tmp-" in k]


# -- several hosts, one root: CURRENT is written with a conditional PUT (issue 11) -------------


def test_the_s3_server_refuses_a_conditional_write_whose_condition_fails(s3):
    storage = Storage(f"s3://{BUCKET}/conditional")
    storage.probe_conditional_writes()
    storage.write_if_unchanged("CURRENT", b"one\n", None)  # If-None-Match: *
    with pytest.raises(WriteConflict):
        storage.write_if_unchanged("CURRENT", b"two\n", None)
    data, version = storage.read_versioned("CURRENT")
    assert data == b"one\n"
    storage.write_if_unchanged("CURRENT", b"two\n", version)  # If-Match: the ETag read
    with pytest.raises(WriteConflict):
        storage.write_if_unchanged("CURRENT", b"three\n", version)  # that ETag is stale now
    assert storage.read_bytes("CURRENT") == b"two\n"


def _host(tmp: Path, name: str, s3: dict[str, str], mirror: Path, **extra: str) -> dict[str, str]:
    """The environment of a refresh on another host: its own Dagster instance, lock directory
    (TMPDIR) and read cache; the same bucket and upstream."""
    (tmp / name / "tmp").mkdir(parents=True)
    settings = {
        **s3,
        "TMPDIR": str(tmp / name / "tmp"),
        "LIGER_WAREHOUSE_CACHE_DIR": str(tmp / name / "cache"),
        "LIGER_WAREHOUSE_UPSTREAM": str(mirror),
        **extra,
    }
    return cli_env(dagster_home(tmp / name / "dagster"), **settings)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"the paused refresh exited early: {proc.communicate()}"
        assert time.monotonic() < deadline, f"the refresh never reached {path.name}"
        time.sleep(0.1)


@pytest.mark.parametrize("first_publish", [True, False], ids=["first-publish", "next-publish"])
def test_two_hosts_refreshing_one_root_never_both_publish(s3, tmp_path, first_publish):
    """Host B passes its parent check, then stops before its PUT of CURRENT; host A refreshes
    and publishes; B's conditional PUT (If-None-Match: * on an empty root, else If-Match the
    ETag it checked) is refused. The host locks cannot help: they are in separate TMPDIRs."""
    root = f"s3://{BUCKET}/two-hosts-{'first' if first_publish else 'next'}"
    before = None
    if not first_publish:
        assert refresh(root, upstream=str(make_mirror(tmp_path / "before", BEFORE))).result.success
        before = GenerationStore(Storage(root)).current_id()
    mirror = make_mirror(tmp_path / "after", AFTER)
    release = tmp_path / "release-b"
    paused = _host(tmp_path, "b", s3, mirror, LIGER_WAREHOUSE_PAUSE=f"publish={release}")
    loser = subprocess.Popen(
        [*cli_script(), "refresh", "--warehouse", root],
        env=paused,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_for(Path(f"{release}.reached"), loser)
        winner = subprocess.run(
            [*cli_script(), "refresh", "--warehouse", root],
            env=_host(tmp_path, "a", s3, mirror),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert winner.returncode == 0, winner.stdout + winner.stderr
        release.touch()
        output, _ = loser.communicate(timeout=120)
    finally:
        if loser.poll() is None:
            loser.kill()
    storage = Storage(root)
    gens = GenerationStore(storage)
    current = gens.current()
    assert loser.returncode == 1, output
    assert (
        f"generation {_staged_by_other(gens, current.id)} was built on {before or 'an empty warehouse'}, "
        f"but another writer of {root} published {current.id} meanwhile" in output
    )
    assert "run the refresh again" in output
    # The winner's generation is current, whole and audited; readers see it.
    assert current.parent == before
    assert _referenced(storage, current.id) <= set(storage.list(""))
    assert [o for o in checks.all_checks(gens, current) if not o.passed] == []
    assert _generation_in_views(root) == current.id
    if before:
        assert _referenced(storage, before) <= set(storage.list(""))
    # The loser's generation is staged, built on the same parent, and referenced by nothing.
    loser_gen = gens.load(_staged_by_other(gens, current.id))
    assert loser_gen.parent == before


def _staged_by_other(gens: GenerationStore, current: str) -> str:
    """The one staged manifest that is neither current nor an ancestor of it."""
    ancestors = set()
    gen_id: str | None = current
    while gen_id:
        ancestors.add(gen_id)
        gen_id = gens.load(gen_id).parent
    staged = [k.removeprefix("generations/").removesuffix(".json") for k in gens.storage.list("generations")]
    (other,) = [g for g in staged if g not in ancestors]
    return other


class _DropConditions(BaseHTTPRequestHandler):
    """Forwards every request to the S3 server without If-Match / If-None-Match: an
    S3-compatible store that ignores conditional writes."""

    upstream: tuple[str, int]
    protocol_version = "HTTP/1.1"  # answers "Expect: 100-continue", which botocore sends with a PUT

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        dropped = {"if-match", "if-none-match", "host", "connection", "expect"}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(key, value)
        length_header = response.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length_header or str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def test_a_store_that_ignores_conditional_writes_is_refused_before_publishing(s3, tmp_path):
    target = s3["LIGER_WAREHOUSE_S3_ENDPOINT"].removeprefix("http://").split(":")
    handler = type("Handler", (_DropConditions,), {"upstream": (target[0], int(target[1]))})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    root = f"s3://{BUCKET}/no-conditions"
    try:
        with env(LIGER_WAREHOUSE_S3_ENDPOINT=f"http://127.0.0.1:{proxy.server_port}"):
            built = refresh(root, upstream=str(make_mirror(tmp_path / "before", BEFORE)))
            storage = Storage(root)
            staged = storage.list("generations")
            current = storage.exists("CURRENT")
    finally:
        proxy.shutdown()
    assert not built.result.success
    (message,) = step_failures(built.result)
    assert "applied a PUT whose If-Match condition failed" in message and "nothing was published" in message
    assert not current and len(staged) == 1  # staged and audited, never published
