"""The rows of one revision, as the builder reads them: the ``RowSource`` protocol.

An upstream revision is a CSV file, read by ``UpstreamCsvRows``. A source of another format
(the kernelindex importer's NDJSON, imports/kernelindex.py) supplies its own ``RowSource``:
how its file splits into records and what one record says. Everything after that (digests,
dimension rows, quarantine, the lake's rows) is the builder's and the same for all.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from liger_warehouse.normalize.csvfile import CsvFile, Record, split_csv
from liger_warehouse.normalize.rows import Row, parse_row


class RowSource(Protocol):
    """How the records of one revision's file are read."""

    @property
    def reads_columns(self) -> bool:
        """Whether its records are upstream CSV rows, which the columnar reader may type
        column by column (normalize/columnar.py); every other record goes through
        ``read_row``, which stays the definition."""
        ...

    def split(self, data: bytes, where: str) -> CsvFile:
        """The records of one revision's file; ``FileRejected`` naming ``where`` when the
        bytes are not such a file."""
        ...

    def read_row(self, parsed: CsvFile, record: Record, stem: str | None, now: datetime) -> tuple[Row, str | None]:
        """Typed values of one record (``ValueError`` saying why not, which quarantines it),
        and the file stem its suite and backend follow; ``stem`` is the revision's own (None
        for a gh-pages run), ``now`` the time a timestamp may not be after."""
        ...


class UpstreamCsvRows:
    """The rows of an upstream benchmark CSV (a main-branch file or a gh-pages run)."""

    reads_columns = True

    def split(self, data: bytes, where: str) -> CsvFile:
        return split_csv(data, where)

    def read_row(self, parsed: CsvFile, record: Record, stem: str | None, now: datetime) -> tuple[Row, str | None]:
        return parse_row(parsed.fields(record), now), stem
