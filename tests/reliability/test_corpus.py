"""The bad-input corpus (``tests/corpus``, described in its README) through the real refresh.

Each CSV of the corpus becomes one gh-pages run of a copy of the ``BEFORE`` mirror, and one
refresh of a copy of the base warehouse ingests them all: over loopback HTTP (the production
path) and again from the mirror directory. Each file has exactly one expected behaviour:

* ``Accepted``: every row ingested, and the file rebuilds byte for byte from the warehouse;
* ``Quarantined``: the row at ``line`` is in ``quarantined_row`` with ``reason``, the rest are in;
* ``Rejected``: the file is refused with one error naming the file, the revision and the line;
* ``Deferred``: nothing is stored for it, the error says why, the next refresh tries again.

Whatever the input, the snapshot published before is untouched and the audits pass.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import refresh
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views
from tests.reliability.conftest import copy_warehouse
from tests.reliability.published import (
    Published,
    assert_current_is_whole,
    assert_still_there,
    published,
    step_failures,
    summary,
)
from tests.reliability.upstreams import RUNS, add_run, copy_mirror, runs, set_runs

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
HUGE_MARKER = b"@@10MB@@"
HUGE_FIELD = 10 * 1024 * 1024
# Under the 16 MiB gzip bomb, over the 10 MiB field: both readers get the same cap.
CAP_MB = "12"


@dataclass(frozen=True)
class Accepted:
    rows: int
    results: int | None = None  # distinct results, when duplicates fold


@dataclass(frozen=True)
class Quarantined:
    line: int
    reason: str
    accepted: int


@dataclass(frozen=True)
class Rejected:
    line: int
    says: str


@dataclass(frozen=True)
class Deferred:
    says: str


Expect = Accepted | Quarantined | Rejected | Deferred

# Every CSV of the corpus and what the warehouse must do with it (README.md says why).
CSV_CORPUS: dict[str, Expect] = {
    "ok_baseline.csv": Accepted(2),
    "missing_column.csv": Rejected(1, "missing liger_version"),
    "extra_column.csv": Rejected(1, "unexpected 'notes'"),
    "renamed_column.csv": Rejected(1, "missing gpu_name; unexpected 'gpu'"),
    "duplicate_column.csv": Rejected(1, "duplicate column names"),
    "reordered_columns.csv": Accepted(2),
    "empty.csv": Rejected(1, "empty file"),
    "blank_lines_only.csv": Rejected(1, "empty file"),
    "header_only.csv": Accepted(0),
    "bom.csv": Accepted(2),
    "crlf.csv": Accepted(2),
    "cr_only.csv": Accepted(2),
    "no_final_newline.csv": Accepted(2),
    "blank_lines_between.csv": Accepted(2),
    "quoted_newline.csv": Accepted(2),
    "non_utf8.csv": Rejected(3, "not UTF-8 (byte 0xe9)"),
    "nul_byte.csv": Quarantined(3, "kernel_name holds a control character (0x00)", 1),
    "nan_value.csv": Quarantined(3, "y_value_50 is not finite: 'nan'", 1),
    "inf_value.csv": Quarantined(3, "y_value_80 is not finite: 'inf'", 1),
    "negative_value.csv": Quarantined(3, "y_value_20 is negative: '-0.1'", 1),
    "zero_values.csv": Accepted(2),
    "not_a_number.csv": Quarantined(3, "y_value_50 is not a number: 'fast'", 1),
    "p20_above_p80.csv": Quarantined(3, "quantiles out of order: p20=0.9 p50=0.5 p80=0.1", 1),
    "config_invalid_json.csv": Quarantined(3, "extra_benchmark_config_str: invalid JSON", 1),
    "config_not_object.csv": Quarantined(3, "extra_benchmark_config_str: expected a JSON object, got list", 1),
    "config_duplicate_keys.csv": Quarantined(3, "extra_benchmark_config_str: duplicate keys in JSON object", 1),
    "duplicate_rows.csv": Accepted(3, results=2),
    "huge_field.csv.template": Quarantined(3, "characters, over the 65536-character cap", 2),
    "unknown_gpu.csv": Accepted(1),
    "future_timestamp.csv": Quarantined(3, "timestamp is in the future: '2999-01-01 00:00:00'", 1),
    "bad_timestamp.csv": Quarantined(3, "timestamp is not a date and time: 'yesterday at noon'", 1),
    "bad_version.csv": Quarantined(3, "liger_version is not a version: 'latest'", 1),
    "empty_required_field.csv": Quarantined(3, "kernel_name is empty", 1),
    "too_few_fields.csv": Quarantined(3, "expected 15 fields, found 14", 1),
    "too_many_fields.csv": Quarantined(3, "expected 15 fields, found 16", 1),
    "stray_quote.csv": Accepted(4),
    "unclosed_quote.csv": Quarantined(4, "malformed CSV row", 2),
    "html_page.csv": Deferred("sent an HTML page, not the file"),
    "json_not_csv.csv": Rejected(1, "not a Liger CSV header"),
    "x_value_not_numeric.csv": Accepted(1),
}
# Read from the mirror directory, an HTML page is just a file that is not a Liger CSV.
MIRROR_OVERRIDES: dict[str, Expect] = {"html_page.csv": Rejected(1, "not a Liger CSV header")}
# Gzip members the mirror reader decompresses (GitHub serves plain files): mirror run only.
GZ_CORPUS: dict[str, Expect] = {
    "gzip_bomb.csv.gz": Deferred("decompresses to more than 12582912 bytes"),
    "not_gzip.csv.gz": Deferred("is not a whole gzip file"),
    "truncated_gzip.csv.gz": Deferred("is not a whole gzip file"),
}
UNSAFE_RUNS = "runs_unsafe.txt"
SENTINEL = b"SENTINEL-OUTSIDE-THE-RUNS"


def _corpus_bytes(name: str) -> bytes:
    data = (CORPUS / name).read_bytes()
    return data.replace(HUGE_MARKER, b"x" * HUGE_FIELD)


def _run_names(names: list[str]) -> dict[str, str]:
    """One gh-pages run per corpus file: 7 hex digits, as upstream names them."""
    return {name: f"c{i:06x}" for i, name in enumerate(names, start=1)}


@dataclass
class CorpusRun:
    root: Path
    before: Published
    runs: dict[str, str]
    expect: dict[str, Expect]
    summary: dict
    failures: list[str]
    unsafe_lines: dict[int, str]

    @property
    def db(self) -> Path:
        return self.root / "catalog.sqlite"

    def query(self, sql: str, *params) -> list[tuple]:
        with open_views(self.db) as con:
            return con.execute(sql, list(params)).fetchall()


def _corpus_mirror(before_mirror: Path, dst: Path, files: dict[str, str], golden: str) -> tuple[Path, dict[int, str]]:
    mirror = copy_mirror(before_mirror, dst)
    for name, run in files.items():
        if name.endswith(".gz"):
            target = mirror / RUNS / run / "benchmark.csv.gz"
            target.parent.mkdir(parents=True)
            target.write_bytes((CORPUS / name).read_bytes())
            set_runs(mirror, [*runs(mirror), run])
        else:
            add_run(mirror, run, _corpus_bytes(name))
    # Unsafe run names after the real ones; one would reach a file planted outside the runs.
    listed = runs(mirror)
    unsafe = (CORPUS / UNSAFE_RUNS).read_text().splitlines()
    set_runs(mirror, listed + unsafe)
    planted = mirror / "gh-pages" / "evil" / "benchmark.csv.gz"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(gzip.compress(_corpus_bytes("ok_baseline.csv").replace(b"embedding", SENTINEL)))
    (mirror / RUNS / "golden_commits.json").write_bytes((CORPUS / golden).read_bytes())
    return mirror, {len(listed) + i: line for i, line in enumerate(unsafe, start=1) if line.strip()}


def _corpus_run(root: Path, before: Published, done, files: dict[str, str], expect: dict, unsafe) -> CorpusRun:
    assert done.result.success, step_failures(done.result)
    failures = done.result.output_for_node("upstream_snapshots").failures
    return CorpusRun(root, before, files, expect, summary(root), failures, unsafe)


@pytest.fixture(scope="module")
def http_corpus(base_warehouse, before_mirror, tmp_path_factory) -> CorpusRun:
    tmp = tmp_path_factory.mktemp("corpus-http")
    files = _run_names(list(CSV_CORPUS))
    mirror, unsafe = _corpus_mirror(before_mirror, tmp / "mirror", files, "golden_not_json.json")
    root = copy_warehouse(base_warehouse, tmp / "warehouse")
    before = published(root)
    with FakeGitHub(mirror) as fake:
        done = refresh(root, fake)
    return _corpus_run(root, before, done, files, dict(CSV_CORPUS), unsafe)


@pytest.fixture(scope="module")
def mirror_corpus(base_warehouse, before_mirror, tmp_path_factory) -> CorpusRun:
    tmp = tmp_path_factory.mktemp("corpus-mirror")
    expect = {**CSV_CORPUS, **MIRROR_OVERRIDES, **GZ_CORPUS}
    files = _run_names(list(expect))
    mirror, unsafe = _corpus_mirror(before_mirror, tmp / "mirror", files, "golden_not_object.json")
    root = copy_warehouse(base_warehouse, tmp / "warehouse")
    before = published(root)
    done = refresh(root, upstream=str(mirror), LIGER_WAREHOUSE_MAX_DOWNLOAD_MB=CAP_MB)
    return _corpus_run(root, before, done, files, expect, unsafe)


@pytest.fixture(params=["http", "mirror"])
def corpus(request) -> Iterator[CorpusRun]:
    yield request.getfixturevalue(f"{request.param}_corpus")


def _check(run: CorpusRun, name: str) -> None:
    expect, commit = run.expect[name], run.runs[name]
    revision = run.query(
        "select revision_digest, row_count, quarantined_count from dim_upstream_revision where run = ?", commit
    )
    mentions = [m for m in run.summary["rejected"] if f"revision {commit}," in m]
    failures = [f for f in run.failures if f"gh-pages run {commit}:" in f]
    match expect:
        case Accepted(rows, results):
            assert (mentions, failures) == ([], [])
            (rev, row_count, quarantined) = revision[0]
            assert (row_count, quarantined) == (rows, 0)
            distinct = run.query(
                "select count(distinct result_digest) from fact_revision_member where revision_digest = ?", rev
            )
            assert distinct == [(results if results is not None else rows,)]
            _rebuilds_byte_for_byte(run, name, rev)
        case Quarantined(line, reason, accepted):
            assert (mentions, failures) == ([], [])
            (rev, row_count, quarantined) = revision[0]
            assert (row_count, quarantined) == (accepted + 1, 1)
            ((got_line, got_reason, path, got_commit),) = run.query(
                "select line_number, reason, path, commit from quarantined_row where revision_digest = ?", rev
            )
            assert (got_line, path, got_commit) == (line, f"benchmarks/{commit}/benchmark.csv", commit)
            assert reason in got_reason
            _rebuilds_byte_for_byte(run, name, rev)
        case Rejected(line, says):
            assert revision == [] and failures == []
            (message,) = mentions
            assert message.startswith(f"benchmarks/{commit}/benchmark.csv at gh-pages revision {commit}, line {line}: ")
            assert says in message
        case Deferred(says):
            assert revision == [] and mentions == []
            (message,) = failures
            assert says in message
            assert f"gh-pages run {commit}" in run.summary["deferred"]


@pytest.mark.parametrize("name", CSV_CORPUS)
def test_corpus_file_over_http(name, http_corpus):
    _check(http_corpus, name)


@pytest.mark.parametrize("name", [*CSV_CORPUS, *GZ_CORPUS])
def test_corpus_file_from_a_mirror(name, mirror_corpus):
    _check(mirror_corpus, name)


def _rebuilds_byte_for_byte(run: CorpusRun, name: str, rev: str) -> None:
    """Accepted and quarantined rows, their suffixes and the header give back the file."""
    ((text,),) = run.query(
        """
        select r.header_text || r.header_suffix
            || coalesce(string_agg(x.row_text || x.line_suffix, '' order by x.ordinal), '')
        from dim_upstream_revision r
        left join (
            select m.revision_digest, m.ordinal, f.row_text, m.line_suffix
            from fact_revision_member m join fact_result f using (result_digest)
            union all
            select revision_digest, ordinal, row_text, line_suffix from quarantined_row
        ) x using (revision_digest)
        where r.revision_digest = ?
        group by r.header_text, r.header_suffix
        """,
        rev,
    )
    assert text.encode("utf-8") == _corpus_bytes(name)


def test_published_before_is_untouched_and_audits_pass(corpus):
    assert_still_there(corpus.root, corpus.before)
    assert_current_is_whole(corpus.root)


def test_unsafe_run_names_are_skipped_before_any_path_is_built(corpus):
    problems = [w for w in corpus.summary["warnings"] if "invalid run name" in w]
    assert problems == [
        f"benchmarks/commits.txt line {n}: invalid run name {line!r} skipped" for n, line in corpus.unsafe_lines.items()
    ]
    listed = {r for (r,) in corpus.query("select run from dim_upstream_revision where run is not null")}
    assert listed.isdisjoint(corpus.unsafe_lines.values())
    assert corpus.query("select count(*) from fact_result where contains(row_text, ?)", SENTINEL.decode()) == [(0,)]


def test_invalid_golden_commits_keep_the_last_ones(corpus, base_warehouse):
    assert any(
        w.startswith("benchmarks/golden_commits.json: not a golden-commits object") for w in corpus.summary["warnings"]
    )
    with open_views(base_warehouse / "catalog.sqlite") as con:
        before = con.execute("select * from golden_commit order by all").fetchall()
    assert corpus.query("select * from golden_commit order by all") == before


def test_reordered_columns_mean_the_same_rows(http_corpus):
    sql = """
        select f.p20, f.p50, f.p80, f.protocol_digest, f.workload_digest, f.environment_digest, f.implementation_digest
        from fact_result f join dim_upstream_revision r on f.first_revision_digest = r.revision_digest
        where r.run = ? order by all
    """
    runs = http_corpus.runs
    assert http_corpus.query(sql, runs["reordered_columns.csv"]) == http_corpus.query(sql, runs["ok_baseline.csv"])


def test_accepted_oddities_are_kept_as_written(http_corpus):
    runs, q = http_corpus.runs, http_corpus.query
    header = "select header_text, header_suffix from dim_upstream_revision where run = ?"
    assert q(header, runs["bom.csv"])[0][0].startswith("\ufeff")
    assert q(header, runs["crlf.csv"])[0][1] == "\r\n"
    assert q(header, runs["cr_only.csv"])[0][1] == "\r"
    gpu = "select gpu_name, in_catalog from dim_environment where gpu_name = 'ACME Tensor 9000'"
    assert q(gpu) == [("ACME Tensor 9000", False)]
    assert "GPU 'ACME Tensor 9000' is not in the GPU catalog" in http_corpus.summary["warnings"]
    by_run = """
        select f.p50, f.row_text, w.x_value_num
        from fact_result f join dim_workload w using (workload_digest)
        join dim_upstream_revision r on f.first_revision_digest = r.revision_digest
        where r.run = ? order by f.p50
    """
    assert [p50 for p50, _, _ in q(by_run, runs["zero_values.csv"])] == [0.0, 0.5]
    assert [x for _, _, x in q(by_run, runs["x_value_not_numeric.csv"])] == [None]
    assert any("\n" in text for _, text, _ in q(by_run, runs["quoted_newline.csv"]))
    assert any(text.startswith('embed"ding,') for _, text, _ in q(by_run, runs["stray_quote.csv"]))


def test_commits_listing_with_an_unsafe_sha_fails_the_refresh_and_changes_nothing(base_copy, before_mirror, tmp_path):
    mirror = copy_mirror(before_mirror, tmp_path / "mirror")
    (mirror / "commits" / "all_benchmark_data.json").write_bytes((CORPUS / "commits_bad_sha.json").read_bytes())
    before = published(base_copy)
    done = refresh(base_copy, upstream=str(mirror))
    assert not done.result.success
    (message,) = step_failures(done.result)
    assert "list of commits for benchmark/data/all_benchmark_data.csv: invalid sha '../../etc/passwd'" in message
    assert published(base_copy) == before


def test_corpus_is_big_enough_and_documented():
    files = sorted(p.name for p in CORPUS.iterdir() if p.name != "README.md")
    listings = {UNSAFE_RUNS, "golden_not_json.json", "golden_not_object.json", "commits_bad_sha.json"}
    covered = {*CSV_CORPUS, *GZ_CORPUS, *listings}
    assert set(files) == covered
    assert len(files) >= 30
    readme = (CORPUS / "README.md").read_text()
    assert [f for f in files if f"`{f}`" not in readme] == []
