"""Split an upstream CSV into records, keeping the exact text needed to rebuild it byte for byte.

Each record keeps its own text and the exact text that follows it up to the next record (its
line terminator plus any blank lines), so header + records + suffixes concatenate back to the
original file. Quoted fields may span lines; the split follows CSV quoting.
"""

from __future__ import annotations

import csv
import re
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
        raw = next(csv.reader([record.text], strict=True))
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


def _physical_records(text: str) -> list[tuple[int, str, str]]:
    """(line number, record text, suffix) per record, blank lines folded into suffixes."""
    pieces = _LINE.split(text)
    out: list[tuple[int, str, str]] = []
    line, pending, start = 1, None, 1
    for i in range(0, len(pieces), 2):
        content = pieces[i]
        end = pieces[i + 1] if i + 1 < len(pieces) else ""
        if pending is not None:
            pending += content
        elif content == "" and out:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + end)
            line += 1
            continue
        else:
            pending, start = content, line
        if pending.count('"') % 2 == 0:
            out.append((start, pending, end))
            pending = None
        else:
            pending += end
        line += 1
    if pending is not None:
        out.append((start, pending, ""))
    return out


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
    physical = _physical_records(text)
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
