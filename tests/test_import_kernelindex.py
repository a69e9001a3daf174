"""Issue 4 acceptance, import side: an export imported back gives the same results and digests;
bad records are quarantined with the reason and line, and the import rebuilds byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.import_kernelindex import split_ndjson
from pipelines.store.generations import GenerationStore
from pipelines.store.storage import Storage
from tests.conftest import REFERENCE, env, refresh
from tests.plain_duckdb import open_views
from tests.test_export_kernelindex import export_path

VALUES = (
    "protocol_digest, workload_digest, environment_digest, implementation_digest, "
    "metric, unit, p20, p50, p80, observed_at, liger_version"
)


def _query(root: Path, sql: str) -> list[tuple]:
    with open_views(root / "liger.duckdb") as con:
        return con.execute(sql).fetchall()


def _cli(*args: str):
    with env(LIGER_WAREHOUSE_DIR=None):
        return CliRunner().invoke(app, list(args))


@pytest.fixture
def copy_of(mirror_warehouse, tmp_path) -> Path:
    root = tmp_path / "warehouse"
    shutil.copytree(mirror_warehouse.root, root, ignore=shutil.ignore_patterns("exports"))
    return root


def test_round_trip_gives_the_same_results_and_digests(mirror_warehouse, copy_of, tmp_path):
    exported = export_path(mirror_warehouse.root)
    dims = "select (select count(*) from dim_workload), (select count(*) from dim_implementation)"
    dims_before = _query(copy_of, dims)
    result = _cli("import", "kernelindex", str(exported), "--name", "round-trip", "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    originals = set(_query(copy_of, f"select {VALUES} from fact_result where source != 'import'"))
    imported = _query(copy_of, f"select {VALUES} from fact_result where source = 'import'")
    assert set(imported) == originals
    lines = exported.read_bytes().splitlines()
    assert len(imported) == len(set(lines))  # one result per distinct record line
    assert _query(copy_of, "select count(*) from quarantined_row") == [(0,)]
    assert _query(copy_of, dims) == dims_before  # every digest claim held: no new dimension rows
    revision = "select source_key, is_head, is_upstream from dim_upstream_revision where source = 'import'"
    assert _query(copy_of, revision) == [("import:round-trip", True, False)]
    # Exporting imported results gives back the very same records (one kernel keeps this quick).
    out = tmp_path / "again"
    result = _cli(
        "export", "kernelindex", "--source", "import", "--kernel", "rope", "--out", str(out), "-w", str(copy_of)
    )
    assert result.exit_code == 0, result.output
    (again,) = out.glob("*.ndjson")
    rope = {line for line in lines if b'"benchmark":"rope/' in line}
    assert set(again.read_bytes().splitlines()) == rope and rope


def _mixed_file(mirror_warehouse, path: Path) -> bytes:
    """Good records, a foreign one (the reference), and three bad ones, with odd line breaks."""
    good = export_path(mirror_warehouse.root).read_bytes().splitlines()[:2]
    reference = json.loads(REFERENCE.read_text())
    wrong_api = json.loads(good[0])
    wrong_api["run"]["apiVersion"] = "kernelindex.dev/v2"
    wrong_median = json.loads(good[1])
    block = "timing" if "timing" in wrong_median["run"]["spec"] else "memory"
    quantity = "latencyNs" if block == "timing" else "peakBytes"
    wrong_median["run"]["spec"][block][quantity]["median"] += 7
    data = b"\n".join(
        [
            b"",
            good[0] + b"\r",
            b"",
            b"{not json",
            json.dumps(wrong_api).encode(),
            json.dumps(wrong_median).encode(),
            json.dumps(reference).encode(),
            good[1],
            b"  ",
        ]
    )
    path.write_bytes(data)
    return data


def test_bad_records_are_quarantined_and_the_import_rebuilds_exactly(mirror_warehouse, copy_of, tmp_path):
    file = tmp_path / "mixed.ndjson"
    data = _mixed_file(mirror_warehouse, file)
    result = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    reasons = _query(copy_of, "select line_number, reason from quarantined_row order by line_number")
    assert [line for line, _ in reasons] == [4, 5, 6]
    assert reasons[0][1].startswith("not JSON")
    assert "$.run.apiVersion" in reasons[1][1]
    assert "do not follow from sourceNative.metrics" in reasons[2][1]
    assert _query(copy_of, "select count(*) from fact_result where source_key = 'import:mixed'") == [(3,)]
    # The file comes back byte for byte, bad lines and odd line breaks included.
    out = tmp_path / "rebuilt.ndjson"
    result = _cli("export", "liger-csv", "--path", "import:mixed", "--out", str(out), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == data
    # Importing the same bytes again changes nothing.
    generation = GenerationStore(Storage(copy_of)).current_id()
    again = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert again.exit_code == 0 and "already imported" in again.output
    assert GenerationStore(Storage(copy_of)).current_id() == generation


def test_a_foreign_record_gets_digests_of_what_it_says(mirror_warehouse, copy_of, tmp_path):
    file = tmp_path / "reference.ndjson"
    reference = json.loads(REFERENCE.read_text())
    file.write_text(json.dumps(reference) + "\n")
    result = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    digests = _query(
        copy_of,
        """select f.protocol_digest, f.environment_digest, f.implementation_digest, f.workload_digest,
                  w.x_name, w.slug
           from fact_result f join dim_workload w using (workload_digest) where f.source = 'import'""",
    )
    (protocol, environment, implementation, workload, x_name, slug) = digests[0]
    spec = reference["run"]["spec"]
    # Its digests come from an unpublished scheme: none is a warehouse row, so all are recomputed.
    assert workload != spec["workloadDigest"]
    assert (x_name, slug) == ("", spec["sourceNative"]["externalId"].split("/")[-2])
    # Protocol, environment and implementation are fully described by the record: the upstream row's.
    upstream = _query(
        copy_of,
        """select f.protocol_digest, f.environment_digest, f.implementation_digest from fact_result f
           join dim_workload w using (workload_digest)
           where f.source != 'import' and w.kernel = 'embedding' and f.observed_at = '2024-09-03 15:32:05'
             and w.x_value = '131072' and f.metric = 'speed' and f.p50 = 1.4482879638671875""",
    )
    assert (protocol, environment, implementation) in set(upstream)


def test_a_refresh_after_an_import_keeps_it(copy_of, tmp_path, fake_github):
    sub = tmp_path / "sub"
    result = _cli("export", "kernelindex", "--kernel", "embedding", "--out", str(sub), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    (path,) = sub.glob("*.ndjson")
    file = tmp_path / "two.ndjson"
    file.write_bytes(b"\n".join(path.read_bytes().splitlines()[:2]) + b"\n")
    assert _cli("import", "kernelindex", str(file), "-w", str(copy_of)).exit_code == 0
    generation = GenerationStore(Storage(copy_of)).current_id()
    # Upstream has nothing new: the import is neither withdrawn nor stops being current.
    assert refresh(copy_of, fake_github).result.success
    assert GenerationStore(Storage(copy_of)).current_id() == generation
    assert _query(copy_of, "select count(*) from fact_result where source = 'import' and is_current") == [(2,)]


def test_split_keeps_every_byte():
    data = b'\n\n{"a":1}\r\n\r\n{"b":2}\n  \n{"c":3}'
    parsed = split_ndjson(data, "test")
    assert [r.text for r in parsed.records] == ['{"a":1}', '{"b":2}', '{"c":3}']
    assert [r.line_number for r in parsed.records] == [3, 5, 7]
    assert parsed.header_suffix == "\n\n"
    assert parsed.text().encode() == data
