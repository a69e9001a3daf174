"""The record split: its column-wise fast path agrees with the csv module's split, record for
record, and the records rebuild the file."""

from __future__ import annotations

import gzip
import random

import pytest

from liger_warehouse.normalize.csvfile import (
    CsvFile,
    Record,
    _physical_records,
    _whole_line_records,
    split_csv,
)
from tests.conftest import MIRROR

HEADER = (
    "kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,"
    "y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version"
)
ROW = (
    'rms_norm,liger,full,speed,ms,H,hidden size,1024,0.5,0.4,0.6,"{""M"": 2048}",NVIDIA H100,2025-01-02 03:04:05,0.6.1'
)


def by_csv_module(text: str) -> tuple[list[int], list[str], list[str]]:
    """The definition: the csv module's split, as columns."""
    return tuple(map(list, zip(*_physical_records(text, "test"), strict=True)))


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_equals_the_csv_module_on_random_text(seed):
    """Random text over the characters that matter to CSV: wherever the fast path answers, it
    answers exactly what the csv module does."""
    rng = random.Random(seed)
    alphabet = ["a", "b", ",", '"', '""', "\n", "\r", "\r\n", " ", "\x00", "\u00e9", "\t"]
    weights = [6, 3, 4, 4, 2, 3, 1, 3, 1, 0.2, 0.5, 0.5]
    taken = 0
    for _ in range(5000):
        text = "".join(rng.choices(alphabet, weights, k=rng.randint(1, 14)))
        if not text.strip():
            continue
        fast = _whole_line_records(text)
        if fast is not None:
            taken += 1
            assert fast == by_csv_module(text), repr(text)
    assert taken > 1000


@pytest.mark.parametrize(
    "text",
    [
        f"{HEADER}\r\n{ROW}\r\n{ROW}\r\n",
        f"{HEADER}\n{ROW}\n\n\n{ROW}",  # blank lines join the suffix before them; no final break
        f"{HEADER}\r\n\r\n{ROW}\r\n\r\n",  # blank lines after the header and at the end
        f"{HEADER}\r{ROW}\r",
        f'{HEADER}\n{ROW}\nrms"norm,x,"a""b"c,"",,\n',  # stray quote, text after a closing quote
    ],
)
def test_plain_files_take_the_fast_path(text):
    fast = _whole_line_records(text)
    assert fast is not None
    assert fast == by_csv_module(text)
    assert split_csv(text.encode(), "test").text() == text


@pytest.mark.parametrize(
    "text",
    [
        f'{HEADER}\r\nk,"multi\r\nline",x\r\n{ROW}\r\n',  # a quoted field spans lines
        f"{HEADER}\r\n{ROW}\n{ROW}\r\n",  # two kinds of line break
        f"{HEADER}\n{ROW}\r{ROW}\n",
        f'{HEADER}\n{ROW}\nk,"open\n',  # a quote left open at the end
        f"\n{HEADER}\n{ROW}\n",  # a blank first line
        f"{HEADER}\n{ROW}\x00\n",  # NUL
    ],
)
def test_other_files_go_to_the_csv_module(text):
    assert _whole_line_records(text) is None
    parsed = split_csv(text.encode(), "test") if text[0] != "\n" else None
    if parsed is not None:
        assert parsed.text() == text
        numbers, texts, suffixes = by_csv_module(text)
        assert [r.text for r in parsed.records] == texts[1:]
        assert [r.suffix for r in parsed.records] == suffixes[1:]
        assert [r.line_number for r in parsed.records] == numbers[1:]


def test_records_and_columns_agree():
    text = f"{HEADER}\r\n{ROW}\r\n\r\n{ROW.replace('1024', '2048')}\r\n"
    parsed = split_csv(text.encode(), "test")
    assert parsed.records == [
        Record(1, 2, ROW, "\r\n\r\n"),
        Record(2, 4, ROW.replace("1024", "2048"), "\r\n"),
    ]
    assert [parsed.record(i) for i in range(len(parsed))] == parsed.records
    rebuilt = CsvFile(parsed.header_text, parsed.header_suffix, parsed.positions, parsed.records)
    assert (rebuilt.ordinals, rebuilt.line_numbers, rebuilt.texts, rebuilt.suffixes) == (
        parsed.ordinals,
        parsed.line_numbers,
        parsed.texts,
        parsed.suffixes,
    )
    assert rebuilt.text() == text


def test_every_file_of_the_upstream_mirror_splits_as_the_csv_module_does():
    checked = 0
    for path in sorted(MIRROR.glob("**/*.csv.gz")):
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError):
            continue  # the mirror keeps a few broken files for the reliability tests
        fast = _whole_line_records(text)
        if fast is not None:
            checked += 1
            assert fast == by_csv_module(text), path
    assert checked > 0
