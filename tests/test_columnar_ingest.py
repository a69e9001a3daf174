"""The columnar fast path of ingest gives exactly what the per-row path gives.

Ingest types plain rows column by column (``liger_warehouse/normalize/columnar.py``)
and sends every other new row through its ``RowSource``'s ``read_row``. A row source that reads
upstream CSV but keeps the columnar reader out (``CountedCsv(reads_columns=False)``) sends every
row the per-row way, so building the same upstream both ways and comparing every table checks
the fast path against the definition, row for row, on rows chosen to sit on each edge of "plain".
"""

from __future__ import annotations

import csv
import gzip
import io
from datetime import datetime
from pathlib import Path

import pytest

from benchmarks.synthetic import Settings, generate
from liger_warehouse.build.publish import Published, publish
from liger_warehouse.build.row_source import RowSource, UpstreamCsvRows
from liger_warehouse.lake.location import Lake
from liger_warehouse.model.digests import digest, flat_digest
from liger_warehouse.model.revisions import DEFAULT_PATHS
from liger_warehouse.model.tables import INGESTED
from liger_warehouse.normalize.columnar import result_digests
from liger_warehouse.normalize.csvfile import CsvFile, Record
from liger_warehouse.normalize.rows import Row, result_identity
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.fetch import fetch_revisions
from liger_warehouse.upstream.sources import MirrorUpstream
from tests.plain_duckdb import open_views

NOW = datetime(2026, 1, 1)
HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,"
    "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version"
)
GOOD = [
    "rms_norm",
    "liger",
    "full",
    "speed",
    "ms",
    "H",
    "hidden size",
    "1024",
    "0.5",
    "0.4",
    "0.6",
    '{"M": 2048, "dtype": "torch.bfloat16"}',
    "NVIDIA H100 80GB HBM3",
    "2025-01-02 03:04:05",
    "0.6.1",
]
EDGES = {
    8: ["1", "nan", "inf", "-1", "1e400", "+1.5", ".5", "1.", " 1.5", "1_000", "\u0661", "0x10", "", "1e-3", "2E+2"],
    9: ["0.1", "0.9", "nan", "0.5"],
    11: ['{"M": 1, "M": 2}', "[1]", "{bad", "", "  ", '{"B": 8, "s": "a,b"}', '{"u": "\u00e9\\n"}', "null"],
    12: ["", "  ", "\u00a0", "\x1c", "Unknown GPU", "NVIDIA H200"],
    13: [
        "2024-01-01 00:00:60",
        "0000-01-01 00:00:00",
        "0001-01-01 00:00:00",
        "2024-02-30 00:00:00",
        "2024-1-1 0:0:0",
        "2024-01-01T00:00:00",
        "2024-01-01 00:00:00.5",
        "2099-01-01 00:00:00",
        "2024-01-01  00:00:00",
        " 2024-01-01 00:00:00",
        "2026-01-01 23:59:59",
        "2026-01-02 00:00:01",
    ],
    14: ["abc", "", " 0.1.0 ", "0.1.0rc1", "1!2.0"],
    0: [" ", "ker\tnel", 'k"q', "k,comma", "k\nnewline", "k\\slash", "k\x01ctl", "\u00e9"],
    1: ["", "liger_triton", "liger_cutile"],
    7: ["llama_2_7b", "", "1e3", "x,y"],
}


def _line(fields: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def _edited(column: int, value: str) -> str:
    return _line([*GOOD[:column], value, *GOOD[column + 1 :]])


def edge_files() -> list[list[str]]:
    """One file per edge row, beside plain rows, so that a row Polars cannot split sends only
    its own file to the per-row path."""
    edges = [_edited(column, value) for column, values in EDGES.items() for value in values]
    edges += [
        _edited(8, "nan") + "\r\n" + _edited(8, "nan"),  # a repeated bad row: quarantined twice
        _line(GOOD[:14]),  # 14 fields
        _line([*GOOD, "extra"]),  # 16 fields
        '"rms_norm"x,' + _line(GOOD[1:]),  # text after a closing quote
        'rms_"norm,' + _line(GOOD[1:]),  # a stray quote in an unquoted field
        _edited(11, '{"s": "' + "x" * 70_000 + '"}'),  # over the row cap
        _line(GOOD) + "\r\n",  # a repeated row (one result, two members) and a blank line
    ]
    return [[HEADER, _line(GOOD), edge, _edited(7, "2048")] for edge in edges]


def runs_mirror(root: Path, files: list[list[str]]) -> Path:
    runs = root / "gh-pages" / "benchmarks"
    names = [f"{i:07x}" for i in range(len(files))]
    for name, lines in zip(names, files, strict=True):
        (runs / name).mkdir(parents=True)
        data = ("\r\n".join(lines) + "\r\n").encode("utf-8")
        (runs / name / "benchmark.csv.gz").write_bytes(gzip.compress(data))
    (runs / "commits.txt").write_text("".join(f"{name}\n" for name in names))
    return root


class CountedCsv:
    """Upstream CSV rows through the ``RowSource`` protocol, counting the records read one by one."""

    def __init__(self, reads_columns: bool) -> None:
        self.reads_columns = reads_columns
        self.csv = UpstreamCsvRows()
        self.per_row = 0

    def split(self, data: bytes, where: str) -> CsvFile:
        return self.csv.split(data, where)

    def read_row(self, parsed: CsvFile, record: Record, stem: str | None, now: datetime) -> tuple[Row, str | None]:
        self.per_row += 1
        return self.csv.read_row(parsed, record, stem, now)


def build(mirror: Path, root: Path, rows: RowSource | None = None) -> tuple[Path, Published]:
    raw = RawStore(Storage(root))
    upstream = MirrorUpstream(mirror, DEFAULT_PATHS)
    listing = upstream.list()
    fetched = fetch_revisions(upstream, raw, listing, set())
    return root, publish(Lake.of(str(root)), raw, listing, fetched.contents, rows=rows, now=NOW)


def _count(root: Path, sql: str) -> int:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute(sql).fetchone()[0]


def new_records(root: Path) -> int:
    """Records a build had to read: every result once (in the revision its source first showed
    it), and every quarantined text once per revision (a repeat in the same file is read once)."""
    results = _count(root, "select count(*) from fact_result")
    return results + _count(root, "select count(distinct (revision_digest, row_text)) from quarantined_row")


def table_differences(left: Path, right: Path) -> dict[str, tuple[int, int, int]]:
    """Per table: rows, rows only left, rows only right (ingest times aside)."""
    con = open_views(left / "catalog.sqlite")
    con.execute(f"attach 'ducklake:sqlite:{right / 'catalog.sqlite'}' as other (read_only, data_path '{right}/lake/')")
    out = {}
    for table in INGESTED:
        cols = "* exclude (ingested_at)" if table == "dim_upstream_revision" else "*"
        a, b = f"select {cols} from liger.{table}", f"select {cols} from other.{table}"
        n = con.execute(f"select count(*) from ({a})").fetchone()[0]
        only_a = con.execute(f"select count(*) from (({a}) except all ({b}))").fetchone()[0]
        only_b = con.execute(f"select count(*) from (({b}) except all ({a}))").fetchone()[0]
        out[table] = (n, only_a, only_b)
    con.close()
    return out


def assert_same(mirror: Path, tmp_path: Path) -> dict[str, tuple[int, int, int]]:
    fast = build(mirror, tmp_path / "columnar")
    per_row = CountedCsv(reads_columns=False)  # the definition the columnar path is checked against
    slow = build(mirror, tmp_path / "per-row", per_row)
    diffs = table_differences(fast[0], slow[0])
    assert per_row.per_row == new_records(slow[0])  # the per-row build read every one itself
    assert {t: d for t, d in diffs.items() if d[1] or d[2]} == {}
    assert fast[1].summary == slow[1].summary
    return diffs


def test_edge_rows_match_the_per_row_path(tmp_path):
    mirror = runs_mirror(tmp_path / "mirror", edge_files())
    diffs = assert_same(mirror, tmp_path)
    results, quarantined = diffs["fact_result"][0], diffs["quarantined_row"][0]
    assert quarantined >= 30  # the edges reach the per-row path ...

    counted = CountedCsv(reads_columns=True)
    build(mirror, tmp_path / "counted", counted)
    assert counted.per_row < (results + quarantined) / 2  # ... and plain rows do not


@pytest.mark.parametrize("seed", [3, 4])
def test_synthetic_history_matches_the_per_row_path(tmp_path, seed):
    mirror = tmp_path / "mirror"
    generate(mirror, Settings(revisions=12, rows_per_revision=300, seed=seed, gh_pages_fraction=0.7))
    assert_same(mirror, tmp_path)


@pytest.mark.parametrize("text", ['a,b,"{""x"": 1}",c', "", 'é\\"\x01\x1f\u2028\t\n\r', "k\x7f", "\ud7ff\ue000"])
def test_result_digests_are_the_flat_digest_of_the_identity(text):
    expected = flat_digest(result_identity("gh-pages", "abc-v0.1.0", text))
    assert result_digests([text], "gh-pages", "abc-v0.1.0") == [expected]
    assert expected == digest(result_identity("gh-pages", "abc-v0.1.0", text))
