"""An ``s3://`` warehouse root against a loopback S3 server (moto's server mode).

The real refresh job puts the raw store in a bucket through fsspec and the lake's Parquet files
there through DuckDB's ``httpfs`` extension (loaded from its pip package); the DuckLake catalog
stays in a local SQLite file (``LIGER_WAREHOUSE_CATALOG``). The lake must then hold exactly what
the same upstream refreshed into a local directory holds, every data file its catalog lists must
be in the bucket, and the project's reader must read only its own lake. A real
``liger-warehouse refresh`` SIGKILLed before its commit leaves the lake as it was, and the next
refresh recovers.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.storage import Storage
from tests.conftest import Refreshed, env, refresh
from tests.fake_github import FakeGitHub
from tests.reliability.published import (
    assert_current_is_whole,
    assert_unchanged,
    cli_env,
    cli_refresh,
    contents,
    dagster_home,
    objects,
    published,
    step_failures,
)
from tests.reliability.upstreams import AFTER, BEFORE, make_mirror
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

moto_server = pytest.importorskip("moto.server", reason="moto[server] is a dev dependency")
BUCKET = "liger-warehouse"


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
        "AWS_REGION": "us-east-1",
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


@dataclass(frozen=True)
class S3Warehouse:
    """A warehouse root in the bucket and its lake: catalog in a local file, data in the bucket."""

    root: str
    lake: Lake

    @property
    def settings(self) -> dict[str, str]:
        return {"LIGER_WAREHOUSE_CATALOG": self.lake.catalog}


def s3_warehouse_at(name: str, catalog: Path) -> S3Warehouse:
    root = f"s3://{BUCKET}/{name}"
    return S3Warehouse(root, Lake.of(root, f"sqlite:{catalog}"))


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGitHub]:
    """A cut of the mirror (every kind of data, a fraction of the rows) over loopback HTTP."""
    with FakeGitHub(small_mirror(tmp_path_factory.mktemp("upstream") / "liger-kernel")) as fake:
        yield fake


@pytest.fixture(scope="module")
def s3_warehouse(s3, upstream: FakeGitHub, tmp_path_factory: pytest.TempPathFactory) -> S3Warehouse:
    """``upstream`` refreshed into ``s3://<bucket>/warehouse``, then its outputs written there."""
    warehouse = s3_warehouse_at("warehouse", tmp_path_factory.mktemp("catalog") / "catalog.sqlite")
    built = refresh(warehouse.root, upstream, **warehouse.settings)
    assert built.result.success, step_failures(built.result)
    outputs = refresh(warehouse.root, upstream, job="outputs", **warehouse.settings)
    assert outputs.result.success, step_failures(outputs.result)
    return warehouse


@pytest.fixture(scope="module")
def local_warehouse(upstream: FakeGitHub, tmp_path_factory: pytest.TempPathFactory) -> Refreshed:
    """The same upstream refreshed into a local directory: what the bucket must hold."""
    built = refresh(tmp_path_factory.mktemp("local") / "warehouse", upstream)
    assert built.result.success, step_failures(built.result)
    return built


def _data_files(lake: Lake) -> set[str]:
    """Every Parquet file (and delete file) the lake's newest snapshot reads, as full URIs."""
    with open_lake(lake, read_only=True) as con:
        tables = [name for name, kind in objects(con).items() if kind == "table"]
        files = set()
        for table in tables:
            rows = con.execute("select data_file, delete_file from ducklake_list_files('liger', ?)", [table])
            files |= {f for row in rows.fetchall() for f in row if f}
    return files


def _keys(root: str) -> set[str]:
    """Every object under ``root`` as an ``s3://`` URI."""
    storage = Storage(root)
    return {f"s3://{key}" for key in storage.fs.find(storage.root)}


def test_raw_snapshots_lake_files_and_outputs_are_in_the_bucket(s3_warehouse, local_warehouse):
    storage = Storage(s3_warehouse.root)
    raw = storage.list("raw/sha256")
    assert raw and len(raw) == len(Storage(local_warehouse.root).list("raw/sha256"))
    keys = _keys(s3_warehouse.root)
    files = _data_files(s3_warehouse.lake)
    assert files and all(f.startswith(f"{s3_warehouse.root}/lake/") for f in files), sorted(files)[:3]
    assert files <= keys, f"files the catalog lists are not in the bucket: {sorted(files - keys)[:3]}"
    snapshot = published(Path(), s3_warehouse.lake).snapshot
    assert storage.exists(f"reports/{snapshot}/index.html")
    assert storage.exists(f"exports/kernelindex/{snapshot}.ndjson")
    assert not [k for k in keys if ".tmp-" in k]


def test_the_lake_in_the_bucket_holds_what_the_local_lake_holds(s3_warehouse, local_warehouse):
    assert contents(Path(), s3_warehouse.lake) == contents(local_warehouse.root)
    assert_current_is_whole(Path(), s3_warehouse.lake)


def _cli(warehouse: S3Warehouse, *args: str):
    with env(LIGER_WAREHOUSE_DIR=None, LIGER_WAREHOUSE_CATALOG=None):
        return CliRunner().invoke(
            app, ["sql", "--warehouse", warehouse.root, "--catalog", warehouse.lake.catalog, *args]
        )


def test_cli_sql_reads_an_s3_warehouse(s3_warehouse, local_warehouse):
    with open_lake(Lake.of(str(local_warehouse.root)), read_only=True) as con:
        (expected,) = con.execute("select count(*) from fact_result").fetchone()
    result = _cli(s3_warehouse, "--format", "csv", "select count(*) as n from fact_result")
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["n", str(expected)]


def _objects(root: str) -> dict[str, tuple]:
    """Every object under the root with its ETag and size: a write of any of them shows."""
    storage = Storage(root)
    found = storage.fs.find(storage.root, detail=True)
    return {key: (info.get("ETag"), info["size"]) for key, info in found.items()}


def test_cli_sql_on_an_s3_warehouse_writes_nothing_and_reads_only_its_lake(s3_warehouse):
    Storage(f"s3://{BUCKET}/elsewhere").write_text("secret.txt", "not this warehouse's")
    a_file = sorted(_data_files(s3_warehouse.lake))[0]
    catalog = s3_warehouse.lake.catalog_file
    before = (_objects(s3_warehouse.root), catalog.read_bytes())
    refused = {
        f"copy (select 1 as a) to '{a_file}' (format parquet)": "is not a query",
        f"copy (select 'x' as a) to '{s3_warehouse.root}/lake/x.csv' (format csv)": "is not a query",
        f"select content from read_text('s3://{BUCKET}/elsewhere/secret.txt')": "reads only the lake",
        f"select content from read_text('{s3_warehouse.root}/raw/index')": "reads only the lake",
        "select content from read_text('/etc/passwd')": "reads only the lake",
    }
    for sql, message in refused.items():
        result = _cli(s3_warehouse, sql)
        assert result.exit_code == 1, result.output
        # The CLI's error: what failed, then what to do.
        assert result.output.count("\n") == 2 and message in result.output, (sql, result.output)
    assert (_objects(s3_warehouse.root), catalog.read_bytes()) == before


def test_an_s3_root_without_a_catalog_setting_is_refused():
    """A SQLite catalog cannot live in a bucket: an object-store root must name its catalog."""
    with pytest.raises(ValueError, match="LIGER_WAREHOUSE_CATALOG"):
        Lake.of(f"s3://{BUCKET}/no-catalog")


@dataclass
class Killed:
    """A CLI refresh of an S3 warehouse killed before its commit, and how to run it again."""

    warehouse: S3Warehouse
    before: object
    returncode: int
    env: dict[str, str]
    after: FakeGitHub


@pytest.fixture(scope="module")
def killed(s3, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Killed]:
    """A small S3 warehouse published from BEFORE, then a CLI refresh against AFTER (its catalog
    named by the setting alone, as an operator names it) killed after its checks passed and
    before its commit."""
    tmp = tmp_path_factory.mktemp("s3-crash")
    warehouse = s3_warehouse_at("crash", tmp / "catalog.sqlite")
    mirror = make_mirror(tmp / "before", BEFORE)
    assert refresh(warehouse.root, upstream=str(mirror), **warehouse.settings).result.success
    before = published(Path(), warehouse.lake)
    with FakeGitHub(make_mirror(tmp / "after", AFTER)) as after:
        settings = {
            **s3,
            **warehouse.settings,
            "LIGER_WAREHOUSE_UPSTREAM": "github:linkedin/Liger-Kernel",
            "LIGER_WAREHOUSE_GITHUB_API": after.api_base,
            "LIGER_WAREHOUSE_GITHUB_RAW": after.raw_base,
        }
        env = cli_env(dagster_home(tmp / "dagster"), **settings)
        proc = cli_refresh(warehouse.root, {**env, "LIGER_WAREHOUSE_FAILPOINT": "publish"}, timeout=300)
        yield Killed(warehouse, before, proc.returncode, env, after)


def test_killed_before_the_commit_keeps_the_lake_and_recovers(killed, tmp_path):
    warehouse, before = killed.warehouse, killed.before
    assert killed.returncode == -signal.SIGKILL
    assert_unchanged(Path(), before, warehouse.lake)
    files = _data_files(warehouse.lake)
    assert files <= _keys(warehouse.root), "a file the published snapshot reads is gone"

    again = cli_refresh(warehouse.root, killed.env, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    now = published(Path(), warehouse.lake)
    assert now.snapshot > before.snapshot and before.results < now.results, "not published to the named catalog"
    assert _data_files(warehouse.lake) <= _keys(warehouse.root)
    assert_current_is_whole(Path(), warehouse.lake)
    # What a fault-free refresh from BEFORE then AFTER into a local directory holds.
    local = tmp_path / "warehouse"
    assert refresh(local, upstream=str(make_mirror(tmp_path / "before", BEFORE))).result.success
    assert refresh(local, killed.after).result.success
    assert contents(Path(), warehouse.lake) == contents(local)
