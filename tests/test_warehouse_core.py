"""Issue 2 acceptance: the warehouse built from the mirror over loopback HTTP, checked against
an independent recount, then refreshed again with no change and with one new revision."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from liger_warehouse.audit import checks
from liger_warehouse.settings import DUCKDB_THREADS
from tests.conftest import MIRROR, env, refresh, require_mirror
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views
from tests.recount import recount
from tests.reliability.published import contents

# dim_build as every result, grouped by its build, gives it (an independent aggregation of result_build).
BUILDS_FROM_EVERY_RESULT = """
with ranked as (
    select
        build,
        any_value(liger_version) as liger_version,
        any_value(build_kind) as build_kind,
        min(run_seq) as run_seq,
        min(observed_at) as first_observed,
        max(observed_at) as last_observed,
        list(distinct source_label order by source_label) as sources,
        count(*) as results,
        list(distinct source_label order by source_label) filter (where run_seq is not null) as runs,
        max(run_seq) as last_run_seq,
        max({'seq': run_seq, 'run': source_label}) filter (where run_seq is not null).run as last_run
    from result_build
    group by build
)
select
    row_number() over (order by v.version_rank, r.build_kind = 'nightly', r.run_seq nulls first, r.build) as build_rank,
    r.* exclude (run_seq, runs),
    v.version_rank,
    coalesce(r.runs, []) as runs
from ranked as r
left join dim_version as v using (liger_version)
"""


def _snapshots(root: Path) -> list[tuple]:
    """The lake's snapshots: id and the refresh summary each commit carries."""
    return _query(root / "catalog.sqlite", "select snapshot_id, commit_extra_info from ducklake_snapshots('liger')")


def _query(db: Path, sql: str) -> list[tuple]:
    with open_views(db) as con:
        return con.execute(sql).fetchall()


def _files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in (root / "lake").rglob("*.parquet")}


def test_counts_match_independent_recount(mirror_warehouse):
    expected = recount(MIRROR)
    db = mirror_warehouse.database
    assert _query(db, "select count(*) from fact_result") == [(len(expected.results),)]
    assert _query(db, "select count(*) from fact_result where is_current") == [(len(expected.current),)]
    assert dict(_query(db, "select source_key, count(*) from fact_result group by 1")) == dict(expected.per_source)
    assert _query(db, "select count(*) from fact_revision_member") == [(expected.rows,)]
    assert _query(db, "select count(*) from dim_upstream_revision") == [(expected.revisions,)]
    assert _query(db, "select count(*) from quarantined_row") == [(0,)]


def test_no_orphans_and_unique_digests(mirror_warehouse):
    with open_views(mirror_warehouse.database) as con:
        outcomes = checks.all_checks(con)
    assert [o for o in outcomes if not o.passed] == []
    assert len(outcomes) >= 14


def test_every_data_file_of_the_lake_is_zstd(mirror_warehouse):
    files = sorted((mirror_warehouse.root / "lake").rglob("*.parquet"))
    assert len(files) > 20
    with open_views(mirror_warehouse.database) as con:
        (option,) = con.execute(
            "select value from liger.options() where option_name = 'parquet_compression'"
        ).fetchone()
        codecs = {
            c
            for (c,) in con.execute(
                "select distinct compression from parquet_metadata(?)", [list(map(str, files))]
            ).fetchall()
        }
    assert option == "zstd" and codecs == {"ZSTD"}


def test_blocking_checks_ran_and_passed(mirror_warehouse):
    # Non-blocking checks only warn (no_new_regressions, when a refresh brings regressions in).
    evaluations = [e for e in mirror_warehouse.check_evaluations() if e.blocking]
    assert len(evaluations) >= 4
    assert all(e.passed for e in evaluations)


def _jcs_sha(obj: dict) -> str:
    # Written out by hand (sorted keys, no spaces, UTF-8) rather than through the project's code.
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_digests_are_pinned(mirror_warehouse):
    db = mirror_warehouse.database
    a100 = _query(db, "select environment_digest from dim_environment where gpu_name = 'NVIDIA A100-SXM4-80GB'")
    assert a100 == [(_jcs_sha({"gpu_name": "NVIDIA A100-SXM4-80GB"}),)]
    impl = {"backend": "triton", "liger_version": "0.2.1", "provider": "liger"}
    got = _query(
        db,
        "select implementation_digest from dim_implementation where provider='liger' "
        "and liger_version='0.2.1' and backend='triton'",
    )
    assert got == [(_jcs_sha(impl),)]
    proto = {
        "harness": "liger-kernel-bench",
        "metric": "speed",
        "quantiles": [0.5, 0.2, 0.8],
        "statistic": "median",
        "timed_pass": "full",
        "unit": "ms",
    }
    got = _query(
        db,
        "select protocol_digest from dim_protocol where timed_pass='full' and metric='speed' "
        "and harness='liger-kernel-bench'",
    )
    assert got == [(_jcs_sha(proto),)]


def test_every_revision_rebuilds_byte_for_byte_from_parts(mirror_warehouse):
    """The exact text kept per record, suffix and header reassembles every upstream file."""
    db = mirror_warehouse.database
    rebuilt = dict(
        _query(
            db,
            """
            select r.content_digest,
                   r.header_text || r.header_suffix || coalesce(string_agg(f.row_text || m.line_suffix, ''
                       order by m.ordinal), '')
            from dim_upstream_revision r
            left join fact_revision_member m using (revision_digest)
            left join fact_result f using (result_digest)
            group by r.content_digest, r.header_text, r.header_suffix
            """,
        )
    )
    for gz in list(MIRROR.glob("raw/*/benchmark/data/*.csv.gz")) + list(MIRROR.glob("gh-pages/benchmarks/*/*.csv.gz")):
        data = gzip.decompress(gz.read_bytes())
        assert rebuilt["sha256:" + hashlib.sha256(data).hexdigest()].encode() == data, gz


@pytest.fixture
def copy_of(mirror_warehouse, tmp_path):
    root = tmp_path / "warehouse"
    shutil.copytree(mirror_warehouse.root, root)
    return root


def test_no_change_refresh_fetches_and_writes_nothing(copy_of, fake_github):
    # The reference warehouse may come from another xdist worker's fake GitHub (another port,
    # so other URLs in its listing cache): one refresh against this one first.
    assert refresh(copy_of, fake_github).result.success
    before_files, before_snapshots = _files(copy_of), _snapshots(copy_of)
    digests = _query(copy_of / "catalog.sqlite", "select result_digest from fact_result order by 1")
    fake_github.clear_log()
    again = refresh(copy_of, fake_github)
    assert again.result.success
    assert fake_github.content_requests() == []
    assert all(r.status == 304 for r in fake_github.requests), [(r.path, r.status) for r in fake_github.requests]
    assert _files(copy_of) == before_files
    assert _snapshots(copy_of) == before_snapshots
    assert _query(copy_of / "catalog.sqlite", "select result_digest from fact_result order by 1") == digests


def _mirror_with_new_commit(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the mirror whose all_benchmark_data.csv has one more commit: one row re-measured."""
    mirror = tmp_path / "mirror"
    shutil.copytree(require_mirror(), mirror)
    commits_file = mirror / "commits" / "all_benchmark_data.json"
    commits = json.loads(commits_file.read_text())
    head = commits[0]["sha"]
    data = gzip.decompress((mirror / "raw" / head / "benchmark/data/all_benchmark_data.csv.gz").read_bytes())
    lines = data.split(b"\r\n")
    fields = lines[1].split(b",")
    fields[8] = b"9.999"
    fields[10] = b"10.5"
    fields[9] = b"9.5"
    lines[1] = b",".join(fields)
    new_sha = "f" * 40
    target = mirror / "raw" / new_sha / "benchmark/data/all_benchmark_data.csv.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(b"\r\n".join(lines)))
    new = {**commits[0], "sha": new_sha, "html_url": f"https://github.com/linkedin/Liger-Kernel/commit/{new_sha}"}
    new["commit"] = {**commits[0]["commit"], "message": "re-benchmark one row"}
    commits_file.write_text(json.dumps([new, *commits]))
    return mirror, new_sha


def test_one_new_revision_is_the_only_work(copy_of, tmp_path):
    mirror, new_sha = _mirror_with_new_commit(tmp_path)
    db = copy_of / "catalog.sqlite"
    before = _query(db, "select count(*), count(*) filter (where is_current) from fact_result")[0]
    with FakeGitHub(mirror) as fake:
        again = refresh(copy_of, fake)
        # A new server means new listing URLs (no ETags yet); the CSV downloads are what counts.
        content = [r.path for r in fake.content_requests() if r.path.endswith(".csv")]
    assert again.result.success
    assert content == [f"/raw/linkedin/Liger-Kernel/{new_sha}/benchmark/data/all_benchmark_data.csv"]
    summary = json.loads(_snapshots(copy_of)[-1][1])
    assert summary["revisions_ingested"] == 1
    assert (summary["results_added"], summary["results_restated"], summary["results_removed"]) == (1, 1, 0)
    # the builds added up per source are those every result, grouped by its build, gives
    columns = ", ".join(name for name, *_ in _query(db, "describe dim_build"))
    by_source = _query(db, f"select {columns} from dim_build order by build_rank")
    assert by_source == _query(db, f"select {columns} from ({BUILDS_FROM_EVERY_RESULT}) order by build_rank")
    after = _query(db, "select count(*), count(*) filter (where is_current) from fact_result")[0]
    assert after == (before[0] + 1, before[1])
    restated = _query(
        db,
        f"""
        select f.p50 from fact_result f join dim_upstream_revision r on f.first_revision_digest = r.revision_digest
        where r.commit = '{new_sha}'""",
    )
    assert restated == [(9.999,)]
    # the row it re-benchmarked is restated in it, replaced by the new result
    replaced = f"select reason, replacement_p50 from restatements where restated_in = '{new_sha}'"
    assert _query(db, replaced) == [("replaced", 9.999)]


def test_a_mirror_directory_on_every_core_gives_the_lake_github_gives_on_one(mirror_warehouse, tmp_path):
    """The upstream's transport and DuckDB's thread count (the suite's one, conftest.py) change no row."""
    with env(**{DUCKDB_THREADS: None}):
        local = refresh(tmp_path / "w", upstream=str(require_mirror()))
    assert local.result.success
    assert contents(local.root) == contents(mirror_warehouse.root)
