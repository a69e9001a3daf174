"""sql/ loads in the order its files declare (`-- reads:`), so the first error names its cause.

Every file of sql/macros/, sql/views/ and sql/derived/ names what it reads; the line is checked
against the SQL, and a wrong one is an error naming the file before anything runs. A broken
view is reported by its own name and DuckDB's message, not by a view that reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.lake.objects import SQL_DIR, create_sql_objects, create_tables
from liger_warehouse.lake.sql_files import SqlFileError, load_order, read_sql_file
from liger_warehouse.model.tables import STORED

TABLES = set(STORED)


def _copy_sql(tmp_path: Path) -> Path:
    copy = tmp_path / "sql"
    shutil.copytree(SQL_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "__init__.py"))
    return copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_every_file_declares_what_it_reads_and_loads_after_it():
    order = load_order(SQL_DIR, TABLES)
    names = [f.name for f in order]
    assert {"results", "labelled_results", "revision_labels", "compare_versions", "judge"} <= set(names)
    for position, file in enumerate(order):
        assert file.reads & set(names) <= set(names[:position]), (file.name, file.reads)
    for path in sorted((SQL_DIR / "macros").glob("*.sql")):
        assert "create or replace macro" in path.read_text(), path.name
    for path in sorted((SQL_DIR / "views").glob("*.sql")):
        assert "create or replace view" in path.read_text(), path.name
    assert {p.stem for p in (SQL_DIR / "derived").glob("*.sql")} <= set(names), "every derived table loads"
    for path in sorted((SQL_DIR / "derived").glob("*.sql")):
        read_sql_file(path, SQL_DIR, TABLES | set(names))  # its `-- reads:` line matches its select


def test_no_view_sorts():
    for path in sorted((SQL_DIR / "views").glob("*.sql")):
        body = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))
        assert not body.rstrip().rstrip(";").splitlines()[-1].lstrip().startswith("order by"), path.name


def test_a_broken_view_is_named_with_duckdbs_message_not_a_view_that_reads_it(tmp_path: Path):
    sql = _copy_sql(tmp_path)
    # results is read by current_results, restatements and versions, which sort before it
    _edit(sql / "views" / "results.sql", "    r.is_liger\n", "    r.no_such_column\n")
    with open_lake(Lake.of(str(tmp_path / "w"))) as con, pytest.raises(RuntimeError) as raised:
        create_tables(con)
        create_sql_objects(con, sql_dir=sql)
    message = str(raised.value)
    assert message.startswith("views/results.sql: Binder Error"), message
    assert "no_such_column" in message


def test_the_shipped_sql_loads_on_empty_tables(tmp_path: Path):
    with open_lake(Lake.of(str(tmp_path / "w"))) as con:
        create_tables(con)
        created = create_sql_objects(con)
        assert con.execute("select count(*) from regressions").fetchone() == (0,)
    assert {f.name for f in load_order(SQL_DIR, TABLES)} == {*created.derived, *created.views}


def test_an_undeclared_read_is_an_error_naming_the_file(tmp_path: Path):
    sql = _copy_sql(tmp_path)
    _edit(sql / "views" / "current_results.sql", "-- reads: results\n", "-- reads: nothing\n")
    with pytest.raises(SqlFileError, match=r"^views/current_results.sql: reads \['results'\] without naming it"):
        load_order(sql, TABLES)


def test_a_declared_read_the_sql_does_not_make_is_an_error(tmp_path: Path):
    sql = _copy_sql(tmp_path)
    _edit(sql / "views" / "current_results.sql", "-- reads: results\n", "-- reads: results, speedups\n")
    with pytest.raises(SqlFileError, match=r"^views/current_results.sql: `-- reads:` names \['speedups'\], which its"):
        load_order(sql, TABLES)


def test_a_missing_reads_line_is_an_error(tmp_path: Path):
    sql = _copy_sql(tmp_path)
    _edit(sql / "macros" / "version_text.sql", "-- reads: nothing\n", "")
    with pytest.raises(SqlFileError, match=r"^macros/version_text.sql: no `-- reads:` header line"):
        load_order(sql, TABLES)


def test_views_that_read_each_other_are_a_circle(tmp_path: Path):
    sql = _copy_sql(tmp_path)
    _edit(
        sql / "views" / "revision_labels.sql",
        "-- reads: dim_upstream_revision\n",
        "-- reads: dim_upstream_revision, results\n",
    )
    _edit(sql / "views" / "revision_labels.sql", "from dim_upstream_revision;", "from dim_upstream_revision, results;")
    with pytest.raises(SqlFileError, match=r"read each other in a circle: .*revision_labels"):
        load_order(sql, TABLES)
