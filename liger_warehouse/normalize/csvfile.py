"""Split an upstream CSV into records, keeping the exact text needed to rebuild it byte for byte.

Each record keeps its own text and the exact text that follows it up to the next record (its
line terminator plus any blank lines), so header + records + suffixes concatenate back to the
original file. Quoted fields may span lines; the split follows CSV quoting.

The csv module decides where each record ends (``_physical_records``, the definition). Files in
which every line is a whole record, the common case, are split column-wise instead
(``_whole_line_records``), with the same result: thousands of rows per revision then cost no
Python per row.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain

import polars as pl

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
# A line (no terminator) on which Python's csv module, default dialect, starts a record and
# ends it at the line's end: comma-separated fields, each unquoted (a quote inside is text) or
# quoted, with quotes inside doubled and any text after the closing quote (non-strict mode
# keeps it), none holding a line break. A line that does not match ends inside a quoted
# field, holds a second kind of line terminator, or is unusual.
_FIELD = r'(?:"(?:[^"\r\n]|"")*"(?:[^,"\r\n][^,\r\n]*)?|[^,"\r\n][^,\r\n]*)?'
WHOLE_RECORD_LINE = rf"^{_FIELD}(?:,{_FIELD})*$"


class FileRejected(ValueError):
    """The file is not a Liger CSV; the message names the file, revision and line."""


@dataclass(frozen=True)
class Record:
    ordinal: int
    line_number: int
    text: str
    suffix: str


class CsvFile:
    """A split file: the header, and per record its line number, text and suffix.

    The records are held column by column (``texts``, ``suffixes``, ``line_numbers``,
    ``ordinals``): a revision has thousands of them and ingest reads them as columns.
    ``records`` and ``record(i)`` give them as ``Record`` objects.
    """

    def __init__(
        self, header_text: str, header_suffix: str, positions: tuple[int, ...], records: Iterable[Record] = ()
    ) -> None:
        self.header_text, self.header_suffix, self.positions = header_text, header_suffix, positions
        records = list(records)
        self.ordinals = [r.ordinal for r in records]
        self.line_numbers = [r.line_number for r in records]
        self.texts = [r.text for r in records]
        self.suffixes = [r.suffix for r in records]
        self._records: list[Record] | None = records

    @classmethod
    def from_columns(
        cls,
        header_text: str,
        header_suffix: str,
        positions: tuple[int, ...],
        line_numbers: list[int],
        texts: list[str],
        suffixes: list[str],
    ) -> CsvFile:
        """Records numbered 1, 2, ... in file order."""
        parsed = cls(header_text, header_suffix, positions)
        parsed.ordinals = list(range(1, len(texts) + 1))
        parsed.line_numbers, parsed.texts, parsed.suffixes = line_numbers, texts, suffixes
        parsed._records = None
        return parsed

    def __len__(self) -> int:
        return len(self.texts)

    def record(self, i: int) -> Record:
        """The record at index ``i`` (0-based; its ordinal is usually ``i + 1``)."""
        return Record(self.ordinals[i], self.line_numbers[i], self.texts[i], self.suffixes[i])

    @property
    def records(self) -> list[Record]:
        if self._records is None:
            self._records = list(map(Record, self.ordinals, self.line_numbers, self.texts, self.suffixes))
        return self._records

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
        body = "".join(chain.from_iterable(zip(self.texts, self.suffixes, strict=True)))
        return self.header_text + self.header_suffix + body


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FileRejected(f"{where}, line {line}: not UTF-8 (byte {data[exc.start]:#04x})") from None


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
        raise FileRejected(f"{where}, line 1: not a Liger CSV header ({'; '.join(detail)}): {first!r}")
    return tuple(names.index(c) for c in COLUMNS)


def _terminator(text: str) -> str:
    """The line terminator of ``text`` if it has one throughout; a line of ``text`` split on it
    that holds another terminator fails ``WHOLE_RECORD_LINE``."""
    for term in ("\r\n", "\n"):
        if term in text:
            return term
    return "\r"


def _whole_line_records(text: str) -> tuple[list[int], list[str], list[str]] | None:
    """``_physical_records`` as columns (line numbers, texts, suffixes), when every physical
    line is a whole record, split without the csv module; None when that is not plain.

    The common case, taken column-wise: one line terminator throughout, no NUL, a header on
    the first line, and every line matching ``WHOLE_RECORD_LINE``, on which the csv module
    starts and ends a record within the line. Then each non-blank line is one record and each
    blank line joins the suffix of the record before it, exactly as in ``_physical_records``
    (a test compares the two on random text). Anything else goes to ``_physical_records``.
    """
    term = _terminator(text)
    if "\0" in text:
        return None
    lines = text.split(term)
    if not lines[0] or not pl.Series(lines, dtype=pl.String).str.contains(WHOLE_RECORD_LINE).all():
        return None
    suffixes = [term] * len(lines)
    suffixes[-1] = ""
    if len(lines) > 1 and not lines[-1]:
        # The text ends with a terminator: the empty piece after it adds nothing.
        lines.pop()
        suffixes.pop()
    numbers = list(range(1, len(lines) + 1))
    if "" not in lines:
        return numbers, lines, suffixes
    kept: tuple[list[int], list[str], list[str]] = ([], [], [])
    for number, line, suffix in zip(numbers, lines, suffixes, strict=True):
        if line:
            kept[0].append(number)
            kept[1].append(line)
            kept[2].append(suffix)
        else:
            kept[2][-1] += suffix
    return kept


def split_csv(data: bytes, where: str) -> CsvFile:
    """Split ``data``; ``where`` names the file and revision in errors."""
    text = _decode(data, where)
    if not text.strip():
        raise FileRejected(f"{where}, line 1: empty file, not a Liger CSV")
    split = _whole_line_records(text)
    if split is None:
        split = tuple(map(list, zip(*_physical_records(text, where), strict=True)))
    numbers, texts, suffixes = split
    positions = _positions(texts[0], where)
    parsed = CsvFile.from_columns(texts[0], suffixes[0], positions, numbers[1:], texts[1:], suffixes[1:])
    if parsed.text() != text:
        raise FileRejected(f"{where}: could not split the file into records losslessly")
    return parsed
