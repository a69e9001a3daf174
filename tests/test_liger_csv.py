"""Issue 4 acceptance, time travel: every upstream revision and gh-pages run of the mirror,
rebuilt from the tables alone (raw snapshots deleted), has the SHA-256 of the mirror's file."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from liger_warehouse.build.publish import publish
from liger_warehouse.cli import app
from liger_warehouse.export import liger_csv
from liger_warehouse.export.records import connect
from liger_warehouse.lake.connect import held_revisions
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.fetch import fetch_revisions
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream
from tests.conftest import MIRROR, env, require_full_mirror, require_mirror

MAIN_CSV = "benchmark/data/all_benchmark_data.csv"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _without_raw(source: Path, target: Path) -> Path:
    # Catalog and data copied together: the copy reads its own files (the data path is overridden).
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("exports"))
    shutil.rmtree(target / "raw")
    return target


@pytest.fixture(scope="module")
def no_raw(mirror_warehouse, tmp_path_factory) -> Path:
    """A copy of the mirror warehouse whose raw snapshots are gone."""
    return _without_raw(mirror_warehouse.root, tmp_path_factory.mktemp("no-raw") / "warehouse")


@pytest.fixture(scope="module")
def full_no_raw(full_mirror_warehouse, tmp_path_factory) -> Path:
    """The same of the warehouse of the whole snapshot (the larger tier)."""
    return _without_raw(full_mirror_warehouse.root, tmp_path_factory.mktemp("full-no-raw") / "warehouse")


def _export(root: Path, out: Path, *args: str):
    with env(LIGER_WAREHOUSE_DIR=None):
        return CliRunner().invoke(app, ["export", "liger-csv", "-w", str(root), "--out", str(out), *args])


def _rebuilt_and_expected(mirror: Path, root: Path) -> tuple[dict, dict]:
    """Each file of ``mirror`` -> the SHA-256 of its rebuild from ``root``'s tables, and of the file."""
    expected = {}
    for gz in mirror.glob("raw/*/benchmark/data/*.csv.gz"):
        sha, path = gz.relative_to(mirror).parts[1], str(Path(*gz.relative_to(mirror).parts[2:]))[:-3]
        expected[("path", path, sha)] = _sha(gzip.decompress(gz.read_bytes()))
    for gz in mirror.glob("gh-pages/benchmarks/*/benchmark.csv.gz"):
        expected[("run", gz.parent.name, None)] = _sha(gzip.decompress(gz.read_bytes()))
    con = connect(Lake.of(str(root)))
    got = {}
    for kind, name, sha in expected:
        revision = liger_csv.find_run(con, name) if kind == "run" else liger_csv.find_revision(con, name, sha)
        got[(kind, name, sha)] = _sha(liger_csv.rebuild(con, revision))
    return got, expected


def test_every_revision_and_run_is_byte_identical(no_raw):
    got, expected = _rebuilt_and_expected(MIRROR, no_raw)
    assert got == expected
    assert len(expected) == len(list(MIRROR.glob("**/*.csv.gz")))


def test_every_revision_and_run_of_the_whole_snapshot_is_byte_identical(full_no_raw):
    mirror = require_full_mirror()
    got, expected = _rebuilt_and_expected(mirror, full_no_raw)
    assert got == expected
    assert len(expected) == len(list(mirror.glob("**/*.csv.gz"))) > 60


def test_cli_writes_a_revision_and_a_run(no_raw, tmp_path):
    head = json.loads((MIRROR / "commits" / "all_benchmark_data.json").read_text())[-1]["sha"]
    result = _export(no_raw, tmp_path / "first.csv", "--path", MAIN_CSV, "--as-of", head[:7])
    assert result.exit_code == 0, result.output
    raw = MIRROR / "raw" / head / f"{MAIN_CSV}.gz"
    assert (tmp_path / "first.csv").read_bytes() == gzip.decompress(raw.read_bytes())
    run = sorted(p.name for p in (MIRROR / "gh-pages" / "benchmarks").iterdir() if p.is_dir())[0]
    result = _export(no_raw, tmp_path / "run.csv", "--run", run)
    assert result.exit_code == 0, result.output
    gz = MIRROR / "gh-pages" / "benchmarks" / run / "benchmark.csv.gz"
    assert (tmp_path / "run.csv").read_bytes() == gzip.decompress(gz.read_bytes())


def _committed(item: dict) -> datetime:
    return datetime.fromisoformat(item["commit"]["committer"]["date"].replace("Z", "+00:00")).replace(tzinfo=None)


def test_as_of_a_date_is_the_newest_revision_at_or_before_it(no_raw, tmp_path):
    commits = json.loads((MIRROR / "commits" / "all_benchmark_data.json").read_text())
    target = commits[len(commits) // 2]
    day = _committed(target).date()
    # Independently: the newest commit of that path committed on or before that day.
    newest = max((c for c in commits if _committed(c).date() <= day), key=_committed)
    result = _export(no_raw, tmp_path / "dated.csv", "--path", MAIN_CSV, "--as-of", day.isoformat())
    assert result.exit_code == 0, result.output
    raw = MIRROR / "raw" / newest["sha"] / f"{MAIN_CSV}.gz"
    assert _sha((tmp_path / "dated.csv").read_bytes()) == _sha(gzip.decompress(raw.read_bytes()))
    moment = _committed(target).isoformat() + "Z"
    result = _export(no_raw, tmp_path / "moment.csv", "--path", MAIN_CSV, "--as-of", moment)
    raw = MIRROR / "raw" / target["sha"] / f"{MAIN_CSV}.gz"
    assert (tmp_path / "moment.csv").read_bytes() == gzip.decompress(raw.read_bytes())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--path", MAIN_CSV, "--as-of", "2000-01-01"], "no revision committed at or before"),
        (["--path", MAIN_CSV, "--as-of", "fffffff"], "neither a commit"),
        (["--path", "benchmark/data/nope.csv"], "no main-branch revisions"),
        (["--run", "0000000"], "no gh-pages run"),
    ],
)
def test_unknown_revisions_are_refused(no_raw, tmp_path, args, message):
    result = _export(no_raw, tmp_path / "x.csv", *args)
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "x.csv").exists()


def test_ambiguous_prefix_is_refused_and_same_moment_takes_the_later():
    con = duckdb.connect()
    con.execute(
        """create table dim_upstream_revision as
           select * from (values ('r1', 'main', 'p.csv', 'p.csv', 'abcd1111', null, timestamp '2024-01-01 10:00', 1),
                                 ('r2', 'main', 'p.csv', 'p.csv', 'abcd2222', null, timestamp '2024-01-01 10:00', 2))
           t(revision_digest, source, source_key, path, commit, run, committed_at, seq)"""
    )
    con.execute("alter table dim_upstream_revision add column content_digest varchar")
    con.execute("alter table dim_upstream_revision add column row_count int default 0")
    con.execute("alter table dim_upstream_revision add column header_text varchar default ''")
    con.execute("alter table dim_upstream_revision add column header_suffix varchar default ''")
    with pytest.raises(liger_csv.RevisionNotFound, match="ambiguous"):
        liger_csv.find_revision(con, "p.csv", "abcd")
    assert liger_csv.find_revision(con, "p.csv", "abcd2").commit == "abcd2222"
    assert liger_csv.find_revision(con, "p.csv", "2024-01-01").commit == "abcd2222"
    assert liger_csv.find_revision(con, "p.csv", "2024-01-01T12:00:00+02:00").commit == "abcd2222"
    with pytest.raises(liger_csv.RevisionNotFound, match="at or before 2024-01-01T09:59:59"):
        liger_csv.find_revision(con, "p.csv", "2024-01-01T11:59:59+02:00")


def _mirror_with_bad_rows(tmp_path: Path) -> tuple[Path, str, bytes]:
    """A mirror copy whose main CSV has one more commit: a row made invalid and a blank line."""
    mirror = tmp_path / "mirror"
    shutil.copytree(require_mirror(), mirror)
    commits_file = mirror / "commits" / "all_benchmark_data.json"
    commits = json.loads(commits_file.read_text())
    head = commits[0]["sha"]
    lines = gzip.decompress((mirror / "raw" / head / f"{MAIN_CSV}.gz").read_bytes()).split(b"\r\n")
    fields = lines[2].split(b",")
    fields[8] = b"not-a-number"
    lines[2] = b",".join(fields)
    lines.insert(5, b"")
    data = b"\r\n".join(lines)
    sha = "e" * 40
    target = mirror / "raw" / sha / f"{MAIN_CSV}.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(data))
    new = {**commits[0], "sha": sha, "commit": {**commits[0]["commit"], "message": "a bad row"}}
    commits_file.write_text(json.dumps([new, *commits]))
    return mirror, sha, data


def _ingest(root: Path, mirror: Path) -> None:
    """The refresh job's fetch and publish steps alone (the outputs are not needed)."""
    storage, lake = Storage(root), Lake.of(str(root))
    raw = RawStore(storage)
    source = open_upstream(UpstreamSettings(upstream=str(mirror)), storage)
    listing = source.list()
    fetched = fetch_revisions(source, raw, listing, held_revisions(lake))
    assert publish(lake, raw, listing, fetched.contents).snapshot is not None


def test_a_file_with_quarantined_rows_rebuilds_exactly(mirror_warehouse, tmp_path):
    root = tmp_path / "warehouse"
    shutil.copytree(mirror_warehouse.root, root, ignore=shutil.ignore_patterns("exports"))
    mirror, sha, data = _mirror_with_bad_rows(tmp_path)
    _ingest(root, mirror)
    shutil.rmtree(root / "raw")
    con = connect(Lake.of(str(root)))
    assert con.sql("select count(*) from quarantined_row").fetchall() == [(1,)]
    result = _export(root, tmp_path / "bad.csv", "--path", MAIN_CSV, "--as-of", sha[:10])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "bad.csv").read_bytes() == data
    result = _export(root, tmp_path / "head.csv", "--path", MAIN_CSV)
    assert (tmp_path / "head.csv").read_bytes() == data
