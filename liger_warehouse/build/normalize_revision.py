"""One revision's bytes into its new result rows, its members, its quarantined records and its
``dim_upstream_revision`` row.

Rows are typed column by column where the row source allows it and the fields are plain
(normalize/columnar.py); every other new row goes through ``RowSource.read_row`` and
``new_result``, which stay the definition. New dimension rows are collected in ``dims``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from liger_warehouse.build.plan import PendingRevision
from liger_warehouse.build.row_source import RowSource
from liger_warehouse.model.digests import content_digest
from liger_warehouse.model.revisions import GH_PAGES, RevisionRef
from liger_warehouse.model.versions import split_run_name
from liger_warehouse.normalize import columnar
from liger_warehouse.normalize.csvfile import CsvFile, Record
from liger_warehouse.normalize.dimensions import Dimensions, path_stem
from liger_warehouse.normalize.rows import Row


class RevisionNormalizer:
    """Normalizes revisions of any source into one ``Dimensions``."""

    def __init__(self, dims: Dimensions) -> None:
        self.dims = dims
        self._dimension_cache: columnar.DimensionCache | None = None

    def revision(
        self, rows: RowSource, rev: PendingRevision, data: bytes, known: set[str], now: datetime
    ) -> tuple[pl.DataFrame, dict]:
        """The results of ``rev`` not in ``known`` (which gains them) and its revision row;
        fills in its members and quarantined records. ``FileRejected`` when ``rows`` cannot
        read ``data``."""
        parsed, out = self.normalized(rows, rev.ref, rev.digest, data, known, now)
        rev.new_results, rev.members = out.new.height, out.members
        rev.quarantined += [quarantine_row(rev, record, reason) for record, reason in out.rejected]
        return out.new, revision_row(rev, parsed, data, now)

    def normalized(
        self, rows: RowSource, ref: RevisionRef, rev_digest: str, data: bytes, known: set[str], now: datetime
    ) -> tuple[CsvFile, columnar.Normalized]:
        """One revision's file and its results not in ``known`` (which gains them), typed and
        with their digests; ``FileRejected`` when ``rows`` cannot read the file. Writes nothing."""
        parsed = rows.split(data, f"{ref.path} at {ref.source} revision {ref.commit}")
        stem = path_stem(ref.path) if ref.source != GH_PAGES else None

        def per_row(record: Record, result: str) -> dict:
            row, row_stem = rows.read_row(parsed, record, stem, now)
            return self.new_result(row, row_stem, record, result, ref, rev_digest)

        fast = self._columnar_rows(parsed, ref, stem, now) if rows.reads_columns else None
        return parsed, columnar.normalize(parsed, ref, rev_digest, known, slow=per_row, fast=fast)

    def _columnar_rows(
        self, parsed: CsvFile, ref: RevisionRef, stem: str | None, now: datetime
    ) -> columnar.ColumnarRows:
        if self._dimension_cache is None:
            self._dimension_cache = columnar.DimensionCache(self.dims)
        cache = self._dimension_cache
        return columnar.ColumnarRows(parsed.positions, ref.source, ref.source_key, stem, now, cache)

    def new_result(
        self, row: Row, stem: str | None, record: Record, result: str, ref: RevisionRef, rev_digest: str
    ) -> dict:
        """The ``fact_result`` row of a record first seen in revision ``rev_digest``."""
        protocol, workload = self.dims.protocol(row, stem), self.dims.workload(row)
        environment, implementation = self.dims.environment(row), self.dims.implementation(row, stem)
        return {
            "result_digest": result,
            "protocol_digest": protocol,
            "workload_digest": workload,
            "environment_digest": environment,
            "implementation_digest": implementation,
            "series_digest": self.dims.series(row, stem, protocol, workload, environment),
            "source": ref.source,
            "source_key": ref.source_key,
            "metric": row.metric,
            "unit": row.unit,
            "p20": row.p20,
            "p50": row.p50,
            "p80": row.p80,
            "observed_at": row.observed_at,
            "liger_version": row.liger_version,
            "first_revision_digest": rev_digest,
            "last_revision_digest": rev_digest,
            "is_current": False,
            "row_text": record.text,
        }


def quarantine_row(rev: PendingRevision, record: Record, reason: str) -> dict:
    """The ``quarantined_row`` row of a record of ``rev`` that is not a valid result."""
    ref = rev.ref
    return {
        "revision_digest": rev.digest,
        "source": ref.source,
        "source_key": ref.source_key,
        "path": ref.path,
        "commit": ref.commit,
        "ordinal": record.ordinal,
        "line_number": record.line_number,
        "row_text": record.text,
        "line_suffix": record.suffix,
        "reason": reason,
    }


def revision_row(rev: PendingRevision, parsed: CsvFile, data: bytes, now: datetime) -> dict:
    """The ``dim_upstream_revision`` row of a normalized revision (head and upstream flags are
    set when the refresh's rows are written)."""
    ref = rev.ref
    release = split_run_name(ref.run)[1] if ref.run else None
    return {
        "revision_digest": rev.digest,
        "source": ref.source,
        "source_key": ref.source_key,
        "path": ref.path,
        "run": ref.run,
        "commit": ref.commit,
        "release_version": release,
        "seq": ref.seq,
        "committed_at": _timestamp(ref.committed_at),
        "message": ref.message,
        "html_url": ref.html_url,
        "content_digest": content_digest(data),
        "row_count": rev.members.num_rows + len(rev.quarantined),
        "quarantined_count": len(rev.quarantined),
        "header_text": parsed.header_text,
        "header_suffix": parsed.header_suffix,
        "is_head": False,
        "is_upstream": True,
        "ingested_at": now,
    }


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)
