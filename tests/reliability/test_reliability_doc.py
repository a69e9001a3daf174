"""docs/RELIABILITY.md lists every fault, bad input and hostile statement the suite tries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import test_corpus, test_crash, test_network, test_read_only

DOC = Path(__file__).resolve().parents[2] / "docs" / "RELIABILITY.md"

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
