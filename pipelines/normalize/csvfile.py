"""Split an upstream CSV into records, keeping the exact text needed to rebuild it byte for byte.

Each record keeps its own text and the exact text that follows it up to the next record (its
line terminator plus any blank lines), so header + records + suffixes concatenate back to the
original file. Quoted fields may span lines; the split follows CSV quoting.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass

COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
BOM = "\ufeff"
# A longer row is quarantined unparsed: upstream rows are a few hundred characters, and a
# megabyte field would otherwise reach the JSON parser, the dimensions and every view.
MAX_ROW_CHARS = 64 * 1024
_LINE = re.compile(r"(\r\n|\n|\r)")


class FileRejected(ValueError):
    """The file is not a Liger CSV; the message names the file, revision and line."""


@dataclass(frozen=True)
class Record:
    ordinal: int
    line_number: int
    text: str
    suffix: str


@dataclass
class CsvFile:
    header_text: str
    header_suffix: str
    positions: tuple[int, ...]
    records: list[Record]

    def fields(self, record: Record) -> list[str]:
        """The record's fields in the canonical column order (files may reorder columns)."""
        if len(record.text) > MAX_ROW_CHARS:
            size = len(record.text)
            raise ValueError(f"row is {size} characters, over the {MAX_ROW_CHARS}-character cap")
        try:
            raw = next(csv.reader([record.text], strict=True))
        except csv.Error as exc:
            raise ValueError(f"malformed CSV row: {exc}") from None
        if len(raw) != len(COLUMNS):
            raise ValueError(f"expected {len(COLUMNS)} fields, found {len(raw)}")
        return [raw[i] for i in self.positions]

    def text(self) -> str:
        """The file rebuilt from its parts (equals the input)."""
        return (
            self.header_text + self.header_suffix + "".join(r.text + r.suffix for r in self.records)
        )


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FileRejected(
            f"{where}, line {line}: not UTF-8 (byte {data[exc.start]:#04x})"
        ) from None


def _lines(text: str) -> list[tuple[str, str]]:
    """(content, terminator) per physical line; the last line's terminator may be empty."""
    pieces = _LINE.split(text)
    ends = [*pieces[1::2], ""]
    return list(zip(pieces[0::2], ends, strict=True))


def _physical_records(text: str, where: str) -> list[tuple[int, str, str]]:
    """(line number, record text, suffix) per record, blank lines folded into suffixes.

    The csv module itself decides where each record ends (it reads one physical line at a
    time and we count them), so the split agrees with any standard CSV reader, including the
    independent recount of the audits: a stray quote inside an unquoted field is text, not
    the start of a multi-line field.
    """
    lines = _lines(text)
    consumed = 0

    def feed() -> Iterator[str]:
        nonlocal consumed
        for content, end in lines:
            consumed += 1
            yield content + end

    out: list[tuple[int, str, str]] = []
    start = 0
    _allow_fields_of(len(text))
    try:
        for row in csv.reader(feed()):
            chunk = lines[start:consumed]
            body = "".join(c + e for c, e in chunk[:-1]) + chunk[-1][0]
            if not row and out:
                out[-1] = (out[-1][0], out[-1][1], out[-1][2] + body + chunk[-1][1])
            else:
                out.append((start + 1, body, chunk[-1][1]))
            start = consumed
    except csv.Error as exc:
        raise FileRejected(f"{where}, line {start + 1}: not CSV ({exc})") from None
    return out


def _allow_fields_of(size: int) -> None:
    """Let the csv module read fields as long as the file (its default stops at 128 KiB); the
    download cap bounds the file, and ``MAX_ROW_CHARS`` bounds what a row may hold."""
    if csv.field_size_limit() < size + 1:
        csv.field_size_limit(size + 1)


def _positions(header: str, where: str) -> tuple[int, ...]:
    names = next(csv.reader([header.removeprefix(BOM)]))
    missing = [c for c in COLUMNS if c not in names]
    extra = [n for n in names if n not in COLUMNS]
    if missing or extra or len(names) != len(COLUMNS):
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing)}")
        if extra:
            detail.append(f"unexpected {', '.join(repr(e) for e in extra)}")
        if not detail:
            detail.append("duplicate column names")
        first = header[:60]
        raise FileRejected(
            f"{where}, line 1: not a Liger CSV header ({'; '.join(detail)}): {first!r}"
        )
    return tuple(names.index(c) for c in COLUMNS)


def split_csv(data: bytes, where: str) -> CsvFile:
    """Split ``data``; ``where`` names the file and revision in errors."""
    text = _decode(data, where)
    if not text.strip():
        raise FileRejected(f"{where}, line 1: empty file, not a Liger CSV")
    physical = _physical_records(text, where)
    _, header, header_suffix = physical[0]
    positions = _positions(header, where)
    records = [
        Record(n, line, body, suffix)
        for n, (line, body, suffix) in enumerate(physical[1:], start=1)
    ]
    parsed = CsvFile(header, header_suffix, positions, records)
    if parsed.text() != text:
        raise FileRejected(f"{where}: could not split the file into records losslessly")
    return parsed
