"""Printing query results: a readable table for people, CSV or JSON for programs."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Sequence
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table

# Wide enough for a comparison row when stdout is a pipe (rich would assume 80 columns).
PIPE_WIDTH = 200


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_csv(columns: Sequence[str], rows: Sequence[tuple]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)


def write_json(columns: Sequence[str], rows: Sequence[tuple]) -> None:
    records = [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    json.dump(records, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def cell(value: Any) -> str:
    """A short, readable rendering: 4 significant digits for floats, blanks for nulls."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    return str(value)


def stdout_console() -> Console:
    console = Console()
    return console if console.is_terminal else Console(width=PIPE_WIDTH)


def write_table(columns: Sequence[str], rows: Sequence[tuple], title: str | None = None) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    stdout_console().print(table)


def write(fmt: Format, columns: Sequence[str], rows: Sequence[tuple], title: str | None = None) -> None:
    if fmt is Format.csv:
        write_csv(columns, rows)
    elif fmt is Format.json:
        write_json(columns, rows)
    else:
        write_table(columns, rows, title)
