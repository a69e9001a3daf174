"""An NDJSON file of kernelindex records: split losslessly into one record per non-blank line,
and each line read into the warehouse's fields (or rejected with the reason)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson

from liger_warehouse.export.kernelindex import RULES, result_from_kernelindex
from liger_warehouse.normalize.csvfile import CsvFile, FileRejected, Record
from liger_warehouse.normalize.rows import FUTURE_SLACK, RowRejected

_LINE = re.compile(r"(\r\n|\n|\r)")
# What makes a line blank: ASCII whitespace, as for the audit's recount (``bytes.strip``); a
# line of other spaces (U+00A0, U+3000) is a record, quarantined as not JSON.
ASCII_SPACE = " \t\n\r\x0b\x0c"


def split_ndjson(data: bytes, where: str) -> CsvFile:
    """Lines as records, each with the exact text after it (terminator plus blank lines).

    NDJSON has no header: ``header_text`` is empty and ``header_suffix`` holds any blank lines
    before the first record, so ``CsvFile.text()`` is the file again.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRejected(f"{where}: not UTF-8 (byte {exc.start})") from None
    pieces = _LINE.split(text)
    lead, records = "", []
    for i in range(0, len(pieces), 2):
        line, end = pieces[i], pieces[i + 1] if i + 1 < len(pieces) else ""
        if line.strip(ASCII_SPACE):
            records.append(Record(len(records) + 1, i // 2 + 1, line, end))
        elif records:  # a blank line belongs to the text after the record before it
            last = records[-1]
            records[-1] = Record(last.ordinal, last.line_number, last.text, last.suffix + line + end)
        else:
            lead += line + end
    parsed = CsvFile("", lead, (), records)
    if not records:
        raise FileRejected(f"{where}: no records")
    if parsed.text() != text:
        raise FileRejected(f"{where}: could not split the file into lines losslessly")
    return parsed


def read_record(text: str, now: datetime) -> dict[str, Any]:
    """The warehouse fields of one record line, or ``ValueError``/``RowRejected`` saying why not."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise RowRejected(f"not JSON: {exc}") from None
    fields = result_from_kernelindex(record)  # validates against the schema first
    spec = record["run"]["spec"]
    fields["workload_slug"] = spec["sourceNative"]["externalId"].split("/")[-2]
    if not fields["p20"] <= fields["p50"] <= fields["p80"]:
        raise RowRejected(f"quantiles out of order: {spec['sourceNative']['metrics']}")
    if fields["observed_at"] > now + FUTURE_SLACK:
        raise RowRejected(f"observedAt is in the future: {spec['observedAt']}")
    _check_numbers(record, fields)
    return fields


def _check_numbers(record: dict[str, Any], fields: dict[str, Any]) -> None:
    """The median and measurements must be what the export rules make of sourceNative.metrics.

    The warehouse keeps the exact upstream numbers (``sourceNative.metrics``); integer
    nanoseconds or bytes that disagree with them would be a second, contradicting reading.
    """
    rule, spec = RULES[fields["metric"]], record["run"]["spec"]
    median = spec[rule.block][rule.quantity]["median"]
    measured = {m["statistic"]: m["value"] for m in spec["measurements"]}
    expected = {q: round(fields[q] * rule.scale) for q in ("p20", "p50", "p80")}
    if (
        median != expected["p50"]
        or len(spec["measurements"]) != 2
        or measured != {q: expected[q] for q in ("p20", "p80")}
    ):
        raise RowRejected(
            f"run.spec median/measurements do not follow from sourceNative.metrics "
            f"(rounded {expected}): median {median}, measurements {measured}"
        )
