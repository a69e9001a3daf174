"""Issue 4 acceptance, import side: an export imported back gives the same results and digests;
bad records are quarantined with the reason and line, and the import rebuilds byte for byte.

Issue 11: the import is a run of the ``imports`` Dagster job (one transaction: ingest, the
derived tables, the blocking checks) recorded in the instance; a file without one valid record
publishes nothing; ``--dry-run`` writes nothing; an import can be withdrawn and imported again."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.imports.ndjson import split_ndjson
from liger_warehouse.model.digests import digest
from pipelines.defs.schedules import LAUNCHED_BY
from pipelines.defs.warehouse.assets import CHECKS, table_descriptions
from tests.conftest import env, refresh, require_reference
from tests.plain_duckdb import open_views
from tests.reliability.published import dagster_home
from tests.test_export_kernelindex import export_path

pytestmark = pytest.mark.slow

VALUES = (
    "protocol_digest, workload_digest, environment_digest, implementation_digest, "
    "metric, unit, p20, p50, p80, observed_at, liger_version"
)


def _query(root: Path, sql: str) -> list[tuple]:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute(sql).fetchall()


def _snapshot(root: Path) -> int:
    """The newest snapshot of the lake at ``root``."""
    ((snapshot,),) = _query(root, "select max(snapshot_id) from ducklake_snapshots('liger')")
    return snapshot


def _cli(*args: str):
    # Wide enough that rich never wraps a message the tests look for.
    with env(LIGER_WAREHOUSE_DIR=None, COLUMNS="1000"):
        return CliRunner().invoke(app, list(args))


@pytest.fixture(autouse=True)
def instance(tmp_path) -> Iterator[Path]:
    """The Dagster instance the CLI records its runs in: a fresh $DAGSTER_HOME per test."""
    home = dagster_home(tmp_path / "dagster_home")
    with env(DAGSTER_HOME=str(home)):
        yield home


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
    reference = require_reference()
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
            "\u00a0".encode(),  # not blank: only ASCII whitespace is (the audit's recount agrees)
            b"  ",
        ]
    )
    path.write_bytes(data)
    return data


def test_bad_records_are_quarantined_and_the_import_rebuilds_exactly(mirror_warehouse, copy_of, tmp_path, instance):
    file = tmp_path / "mixed.ndjson"
    data = _mixed_file(mirror_warehouse, file)
    result = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    reasons = _query(copy_of, "select line_number, reason from quarantined_row order by line_number")
    assert [line for line, _ in reasons] == [4, 5, 6, 9]
    assert reasons[0][1].startswith("not JSON")
    assert "$.run.apiVersion" in reasons[1][1]
    assert "do not follow from sourceNative.metrics" in reasons[2][1]
    assert reasons[3][1].startswith("not JSON")
    assert _query(copy_of, "select count(*) from fact_result where source_key = 'import:mixed'") == [(3,)]
    # The file comes back byte for byte, bad lines and odd line breaks included.
    out = tmp_path / "rebuilt.ndjson"
    result = _cli("export", "liger-csv", "--path", "import:mixed", "--out", str(out), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == data
    # Importing the same bytes again changes nothing.
    snapshot = _snapshot(copy_of)
    again = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert again.exit_code == 0 and "already imported; nothing changed" in again.output
    assert _snapshot(copy_of) == snapshot
    assert len(_runs(instance)) == 1  # the second import needed no run


def test_a_foreign_record_gets_digests_of_what_it_says(mirror_warehouse, copy_of, tmp_path):
    file = tmp_path / "reference.ndjson"
    reference = require_reference()
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
    snapshot = _snapshot(copy_of)
    # Upstream has nothing new: the import is neither withdrawn nor stops being current.
    assert refresh(copy_of, fake_github).result.success
    assert _snapshot(copy_of) == snapshot
    assert _query(copy_of, "select count(*) from fact_result where source = 'import' and is_current") == [(2,)]


# -- issue 11: a Dagster run; a refused file; a dry run; withdrawal ------------------------------


def _lines(mirror_warehouse, n: int) -> list[bytes]:
    """The first ``n`` records of the reference warehouse's export: valid, with verifiable claims."""
    return export_path(mirror_warehouse.root).read_bytes().splitlines()[:n]


def _tree(root: Path) -> dict[str, str]:
    """Every directory and file under ``root``, files with the SHA-256 of their bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        out[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def _said(output: str) -> list[str]:
    """What a command printed, without its progress bars."""
    return [line.strip() for line in output.splitlines() if line.strip() and "━" not in line]


def _result_digests(lines: list[bytes], name: str) -> list[str]:
    """The documented rule (docs/EXPORTS.md), recomputed: one result per distinct line."""
    key = f"import:{name}"
    return sorted({digest({"row": line.decode(), "source": "import", "source_key": key}) for line in lines})


def _runs(home: Path) -> list[dg.DagsterRun]:
    with env(DAGSTER_HOME=str(home)), dg.DagsterInstance.get() as dagster:
        return [r.dagster_run for r in dagster.get_run_records(dg.RunsFilter(job_name="imports"))]


def test_an_import_is_a_run_of_the_imports_job(mirror_warehouse, copy_of, tmp_path, instance):
    file = tmp_path / "two.ndjson"
    file.write_bytes(b"\n".join(_lines(mirror_warehouse, 2)) + b"\n")
    result = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    current = _snapshot(copy_of)
    assert _said(result.output) == [
        f"import:two: 2 records, 2 new results, 0 quarantined; published snapshot {current}"
    ]
    (run,) = _runs(instance)
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.run_config["ops"]["kernelindex_import"]["config"] == {"name": "two", "file": str(file.resolve())}
    assert run.tags["liger-warehouse/refresh"] == "import"  # one writer at a time in the run queue
    assert run.tags[LAUNCHED_BY] == "cli"
    with env(DAGSTER_HOME=str(instance)), dg.DagsterInstance.get() as dagster:
        # Lineage: the import and every table of the snapshot it published (the derived ones,
        # made again from its facts, included), all from this run.
        for key in ("kernelindex_import", *table_descriptions()):
            event = dagster.get_latest_materialization_event(dg.AssetKey(key))
            assert event is not None and event.run_id == run.run_id, key
            if key != "kernelindex_import":
                assert event.asset_materialization.metadata["snapshot"].value == current, key
        audits = [
            e.dagster_event.event_specific_data
            for e in dagster.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        ]
    blocking = {e.asset_check_key.to_user_string(): e.passed for e in audits if e.blocking}
    assert blocking == {f"{table}:{name}": True for name, (table, _) in CHECKS.items()}
    # The snapshot it published carries derived tables of its own facts, the import's included.
    with open_views(copy_of / "catalog.sqlite") as con:
        missing = con.execute(
            "select count(distinct series_digest) from fact_result anti join dim_series using (series_digest)"
        )
        assert missing.fetchone()[0] == 0


def test_a_file_without_a_valid_record_publishes_nothing(copy_of, tmp_path, instance):
    file = tmp_path / "bad.ndjson"
    file.write_bytes(b'{not json\n{"apiVersion": "kernelindex.dev/v1alpha1"}\n')
    before = _tree(copy_of)
    dry = _cli("import", "kernelindex", str(file), "--dry-run", "-w", str(copy_of))
    assert dry.exit_code == 1
    what, hint = _said(dry.output)
    assert what.startswith("error: import:bad: no valid record among 2 (line 1: not JSON")
    assert hint == "dry run: the import would publish nothing; nothing was written"
    result = _cli("import", "kernelindex", str(file), "-w", str(copy_of))
    assert result.exit_code == 1
    what, hint = _said(result.output)
    assert what.startswith("error: ImportRejected: import:bad: no valid record among 2 (line 1: not JSON")
    assert hint == "the published lake is unchanged; run again with --debug for the trace"
    # Not a byte of the warehouse changed: no catalog row, data file or raw snapshot.
    assert _tree(copy_of) == before
    (run,) = _runs(instance)
    assert run.status == dg.DagsterRunStatus.FAILURE


def test_dry_run_reports_what_would_change_and_writes_nothing(mirror_warehouse, copy_of, tmp_path, instance):
    good = _lines(mirror_warehouse, 2)
    file = tmp_path / "dry.ndjson"
    file.write_bytes(good[0] + b"\n{not json\n" + good[1] + b"\n")
    before = _tree(copy_of)
    result = _cli("import", "kernelindex", str(file), "--dry-run", "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    assert _tree(copy_of) == before  # not a byte: its transaction was rolled back
    assert _runs(instance) == []
    summary, quarantined, added = _said(result.output)
    assert summary == "dry run, nothing written: import:dry would get 3 records, 2 new results, 1 quarantined"
    assert quarantined.startswith("quarantined line 2: not JSON")
    expected = _result_digests(good, "dry")
    # Every digest claim of an export holds, so no dimension row would be added.
    assert added == f"would add 2 fact_result: {', '.join(expected)}"
    # The import itself adds exactly that.
    assert _cli("import", "kernelindex", str(file), "-w", str(copy_of)).exit_code == 0
    held = _query(copy_of, "select result_digest from fact_result where source_key = 'import:dry'")
    assert sorted(d for (d,) in held) == expected


def _current(root: Path, name: str) -> list[str]:
    rows = _query(root, f"select result_digest from fact_result where source_key = 'import:{name}' and is_current")
    return sorted(d for (d,) in rows)


def test_withdraw_keeps_history_and_an_import_makes_it_current_again(mirror_warehouse, copy_of, tmp_path):
    lines = _lines(mirror_warehouse, 5)
    first = tmp_path / "lab.ndjson"
    first.write_bytes(b"\n".join(lines[:3]) + b"\n")
    assert _cli("import", "kernelindex", str(first), "-w", str(copy_of)).exit_code == 0

    result = _cli("import", "withdraw", "lab", "-w", str(copy_of))
    assert result.exit_code == 0, result.output
    assert _said(result.output) == [
        f"import:lab withdrawn: 3 results no longer current; published snapshot {_snapshot(copy_of)}"
    ]
    # History stays: every result and the revision, no longer current, and the file rebuilds.
    assert _query(copy_of, "select count(*) from fact_result where source_key = 'import:lab'") == [(3,)]
    assert _current(copy_of, "lab") == []
    revision = "select is_head, is_upstream from dim_upstream_revision where source_key = 'import:lab'"
    assert _query(copy_of, revision) == [(False, False)]
    restated = "select result_digest, reason, restated_in from restatements where source_key = 'import:lab'"
    assert sorted(_query(copy_of, restated)) == [(d, "withdrawn", None) for d in _result_digests(lines[:3], "lab")]
    out = tmp_path / "rebuilt.ndjson"
    assert _cli("export", "liger-csv", "--path", "import:lab", "--out", str(out), "-w", str(copy_of)).exit_code == 0
    assert out.read_bytes() == first.read_bytes()

    withdrawn_in = _snapshot(copy_of)
    again = _cli("import", "withdraw", "lab", "-w", str(copy_of))
    assert again.exit_code == 0 and _said(again.output) == ["import:lab: already withdrawn; nothing changed"]
    unknown = _cli("import", "withdraw", "nope", "-w", str(copy_of))
    assert unknown.exit_code == 1
    assert _said(unknown.output) == ["error: there is no import named 'nope'; imported: lab", "nothing changed"]
    assert _snapshot(copy_of) == withdrawn_in
    # Another import rewrites the revisions table: the withdrawal stays.
    other = tmp_path / "other.ndjson"
    other.write_bytes(lines[3] + b"\n")
    assert _cli("import", "kernelindex", str(other), "-w", str(copy_of)).exit_code == 0
    assert _current(copy_of, "lab") == [] and _query(copy_of, revision) == [(False, False)]

    # The same file again makes the source current again.
    back = _cli("import", "kernelindex", str(first), "-w", str(copy_of))
    assert back.exit_code == 0, back.output
    assert "(withdrawn before: current again)" in _said(back.output)[0]
    assert _current(copy_of, "lab") == _result_digests(lines[:3], "lab")
    assert _query(copy_of, restated) == []

    # Withdrawn, then a changed file: it is the next revision, and only its records are current.
    assert _cli("import", "withdraw", "lab", "-w", str(copy_of)).exit_code == 0
    changed = tmp_path / "changed" / "lab.ndjson"
    changed.parent.mkdir()
    changed.write_bytes(b"\n".join([*lines[1:3], lines[4]]) + b"\n")
    assert _cli("import", "kernelindex", str(changed), "-w", str(copy_of)).exit_code == 0
    assert _current(copy_of, "lab") == _result_digests([*lines[1:3], lines[4]], "lab")
    heads = "select seq, is_head from dim_upstream_revision where source_key = 'import:lab' order by seq"
    assert _query(copy_of, heads) == [(1, False), (2, True)]
    (gone,) = _query(copy_of, restated)
    commit = hashlib.sha256(changed.read_bytes()).hexdigest()
    assert gone[0] == _result_digests(lines[:1], "lab")[0] and gone[1] in ("removed", "replaced") and gone[2] == commit


def test_split_keeps_every_byte():
    data = b'\n\n{"a":1}\r\n\r\n{"b":2}\n  \n{"c":3}'
    parsed = split_ndjson(data, "test")
    assert [r.text for r in parsed.records] == ['{"a":1}', '{"b":2}', '{"c":3}']
    assert [r.line_number for r in parsed.records] == [3, 5, 7]
    assert parsed.header_suffix == "\n\n"
    assert parsed.text().encode() == data
