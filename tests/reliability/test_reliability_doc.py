"""docs/RELIABILITY.md lists every fault, bad input and hostile statement the suite tries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import test_corpus, test_crash, test_network, test_operator, test_read_only

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "RELIABILITY.md"

NAMES = [
    *test_crash.POINTS,
    *test_network.PERSISTENT,
    *test_network.TRANSIENT,
    *test_network.JOB_FAULTS,
    *test_read_only.NOT_QUERIES,
    *test_read_only.OUTSIDE_READS,
    *test_read_only.MOVED,
    *(p.name for p in test_corpus.CORPUS.iterdir() if p.name != "README.md"),
]


@pytest.mark.parametrize("name", NAMES)
def test_the_doc_lists_it(name):
    assert f"`{name}`" in DOC.read_text()


@pytest.mark.parametrize("case", test_operator.CASES)
def test_the_doc_lists_each_operator_case_with_its_test(case):
    """Each case is in the doc beside the test that shows it, and that test exists."""
    path, name = test_operator.CASES[case].split("::")
    assert f"def {name}(" in (ROOT / path).read_text(), test_operator.CASES[case]
    rows = [line for line in DOC.read_text().splitlines() if f"`{case}`" in line]
    assert rows and any(f"`{name}`" in row for row in rows), f"{case}: no row naming `{name}`"


# Cases tested outside this folder (issue 11): each must exist where the doc says it is.
ELSEWHERE = {
    "test_import_kernelindex.py": (
        "test_an_import_is_a_run_of_the_imports_job",
        "test_a_file_without_a_valid_record_publishes_nothing",
        "test_dry_run_reports_what_would_change_and_writes_nothing",
        "test_withdraw_keeps_history_and_an_import_makes_it_current_again",
        "test_bad_records_are_quarantined_and_the_import_rebuilds_exactly",
    ),
    "reliability/test_postgres_catalog.py": (
        "test_two_hosts_refreshing_one_postgres_catalog_lose_and_duplicate_nothing",
        "test_a_reader_of_a_postgres_catalog_sees_the_old_snapshot_until_the_commit",
        "test_a_refresh_killed_before_its_commit_leaves_the_postgres_catalog_as_it_was",
        "test_a_first_refresh_onto_an_empty_database_creates_the_lake",
    ),
    "reliability/test_concurrency.py": (
        "test_readers_query_every_table_and_view_during_a_refresh_without_an_error",
        "test_a_reader_during_a_refresh_held_before_its_commit_answers_from_the_old_snapshot",
        "test_two_refreshes_of_one_lake_at_once_commit_one_and_lose_nothing",
    ),
}


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in ELSEWHERE.items() for n in names])
def test_the_doc_lists_the_test(module, name):
    assert f"def {name}(" in (ROOT / "tests" / module).read_text()
    assert f"`{name}" in DOC.read_text()
