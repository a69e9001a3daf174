"""Issue 4 acceptance, export side: one kernelindex record per result, the reference row's record
equals the reference except its digests, every record validates, and the CLI takes subsets."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.export.record_schema import schema, validate_record
from liger_warehouse.export.writer import prune_exports, snapshot_key
from liger_warehouse.lake.connect import latest_snapshot
from liger_warehouse.lake.location import Lake
from liger_warehouse.store.storage import Storage
from tests.conftest import env, require_reference
from tests.plain_duckdb import open_views

DIGEST_FIELDS = ("protocolDigest", "workloadDigest", "environmentDigest", "implementationDigest")
# The reference's upstream row (shared/README.md), as the warehouse's dimensions hold it.
REFERENCE_ROW_SQL = """
select f.protocol_digest, f.workload_digest, f.environment_digest, f.implementation_digest
from fact_result f
join dim_protocol p using (protocol_digest) join dim_workload w using (workload_digest)
join dim_environment e using (environment_digest) join dim_implementation i using (implementation_digest)
where w.kernel = 'embedding' and i.provider = 'liger' and p.timed_pass = 'full' and f.metric = 'speed'
  and f.unit = 'ms' and w.x_name = 'V' and w.x_value = '131072'
  and w.config_json = '{"B":32,"D":768,"T":512,"dtype":"torch.float32"}'
  and e.gpu_name = 'NVIDIA A100-SXM4-80GB' and f.observed_at = '2024-09-03 15:32:05'
  and f.liger_version = '0.2.1'
"""


def _query(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_views(db) as con:
        return con.execute(sql, params or []).fetchall()


def export_path(root: Path) -> Path:
    """The export the ``kernelindex_export`` asset wrote for the lake's newest snapshot."""
    snapshot = latest_snapshot(Lake.of(str(root)))
    return root / "exports" / "kernelindex" / f"{snapshot}.ndjson"


@cache
def _records(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(orjson.loads(line) for line in path.read_bytes().splitlines())


@pytest.fixture(scope="module")
def records(mirror_warehouse) -> tuple[dict[str, Any], ...]:
    return _records(export_path(mirror_warehouse.root))


def _without_digest_values(record: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(record)
    for field in DIGEST_FIELDS:
        stripped["run"]["spec"][field] = "<digest>"
    return stripped


def test_the_asset_exported_one_record_per_result(mirror_warehouse, records):
    (count,) = _query(mirror_warehouse.database, "select count(*) from fact_result")[0]
    assert len(records) == count
    (materialization,) = mirror_warehouse.materializations("kernelindex_export")
    metadata = materialization.metadata
    assert metadata["dagster/row_count"].value == count
    assert metadata["schema_validation"].value == f"{count} of {count} records valid against kernelindex.schema.json"


def test_reference_row_record_equals_the_reference_but_for_digest_values(mirror_warehouse, records):
    reference = require_reference()
    native = reference["run"]["spec"]["sourceNative"]
    found = [r for r in records if r["run"]["spec"]["sourceNative"]["externalId"] == native["externalId"]]
    # The row may sit in more than one source (a main path and a run): then its records are equal.
    assert found and all(r == found[0] for r in found)
    record = found[0]
    assert _without_digest_values(record) == _without_digest_values(reference)
    # The four digests are the warehouse's own dimension digests of that upstream row.
    digests = _query(mirror_warehouse.database, REFERENCE_ROW_SQL)
    assert set(digests) == {tuple(record["run"]["spec"][f] for f in DIGEST_FIELDS)}


def test_every_record_validates(records):
    assert [i for i, record in enumerate(records) if validate_record(record)] == []
    # The compiled validator against the reference implementation, on a spread of records.
    reference_validator = Draft202012Validator(schema())
    step = max(1, len(records) // 500)
    assert all(reference_validator.is_valid(r) for r in records[::step])


def test_memory_results_get_records_by_the_memory_rule(mirror_warehouse, records):
    (memory,) = _query(mirror_warehouse.database, "select count(*) from fact_result where metric = 'memory'")[0]
    memory_records = [r for r in records if "memory" in r["run"]["spec"]]
    assert len(memory_records) == memory > 0
    spec = memory_records[0]["run"]["spec"]
    metrics = spec["sourceNative"]["metrics"]
    assert spec["memory"]["peakBytes"]["median"] == round(metrics["mb_50"] * 2**20)
    assert [m["value"] for m in spec["measurements"]] == [round(metrics[k] * 2**20) for k in ("mb_20", "mb_80")]
    assert memory_records[0]["protocol"]["metadata"]["name"].startswith("liger-bench-peak-memory-")


def _export(root: Path, out: Path, *args: str):
    with env(LIGER_WAREHOUSE_DIR=None):
        return CliRunner().invoke(app, ["export", "kernelindex", "-w", str(root), "--out", str(out), *args])


def _lines(out: Path) -> list[dict[str, Any]]:
    (path,) = out.glob("*.ndjson")
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_cli_structured_filters(mirror_warehouse, tmp_path):
    args = ["--kernel", "embedding", "--gpu", "nvidia-a100-sxm4-80gb", "--current-only", "--metric", "speed"]
    result = _export(mirror_warehouse.root, tmp_path, *args)
    assert result.exit_code == 0, result.output
    expected = _query(
        mirror_warehouse.database,
        """select count(*) from fact_result f join dim_workload w using (workload_digest)
           join dim_environment e using (environment_digest)
           where w.kernel = ? and e.gpu_name = ? and f.is_current and f.metric = ?""",
        ["embedding", "NVIDIA A100-SXM4-80GB", "speed"],
    )
    lines = _lines(tmp_path)
    assert len(lines) == expected[0][0] > 0
    assert {r["run"]["spec"]["sourceNative"]["benchmark"].split("/")[0] for r in lines} == {"embedding"}


def test_cli_filter_values_are_bound_not_formatted(mirror_warehouse, tmp_path):
    result = _export(mirror_warehouse.root, tmp_path, "--kernel", "x' or '1'='1")
    assert result.exit_code == 0, result.output
    assert _lines(tmp_path) == []


def test_cli_where_is_one_sandboxed_condition(mirror_warehouse, tmp_path):
    ok = _export(mirror_warehouse.root, tmp_path / "ok", "--where", "kernel = 'rope' and source = 'main'")
    assert ok.exit_code == 0, ok.output
    assert {r["run"]["spec"]["sourceNative"]["benchmark"].split("/")[0] for r in _lines(tmp_path / "ok")} == {"rope"}
    for where in ("1=1; drop view fact_result", "(select count(*) from read_text('/etc/hostname')) > 0"):
        refused = _export(mirror_warehouse.root, tmp_path / "refused", "--where", where)
        assert refused.exit_code == 1, refused.output
        assert not list((tmp_path / "refused").glob("*.ndjson"))


def test_cli_as_of_reads_that_snapshot_and_names_the_file_by_it(mirror_warehouse, tmp_path):
    snapshot = latest_snapshot(Lake.of(str(mirror_warehouse.root)))
    result = _export(mirror_warehouse.root, tmp_path, "--as-of", str(snapshot))
    assert result.exit_code == 0, result.output
    (path,) = tmp_path.glob("*.ndjson")
    assert path.name == f"kernelindex-{snapshot}.ndjson"
    assert path.read_bytes() == export_path(mirror_warehouse.root).read_bytes()
    missing = _export(mirror_warehouse.root, tmp_path / "missing", "--as-of", str(snapshot + 100))
    assert missing.exit_code == 1, missing.output
    assert not (tmp_path / "missing").exists()


def test_prune_keeps_the_newest_snapshots_by_number(tmp_path):
    storage = Storage(tmp_path)
    for snapshot in (2, 9, 10, 11):
        storage.write_text(snapshot_key(snapshot), "{}\n")
        storage.write_text(snapshot_key(snapshot).removesuffix(".ndjson") + ".json", "{}")
    storage.write_text("exports/kernelindex/notes.txt", "not an export")
    assert sorted(prune_exports(storage, keep=2)) == [snapshot_key(2), snapshot_key(9)]
    kept = [f"exports/kernelindex/{name}" for name in ("10.ndjson", "10.json", "11.ndjson", "11.json", "notes.txt")]
    assert storage.list("exports/kernelindex") == sorted(kept)
