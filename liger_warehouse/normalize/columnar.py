"""Normalize one revision column by column: the fast path of ingest.

Per row, Python only hashes the row text into its result digest and looks it up among the
results its source already holds. The new rows are parsed, validated and typed by Polars over
whole columns, and each dimension digest is computed once per distinct key through
``Dimensions``, the same code the per-row path uses.

The per-row path (``parse_row``) stays the definition. This path takes a row only when every
field is in a plain form on which both agree: the CSV fields re-quote to exactly the row text,
numbers are plain decimals, the timestamp is ``YYYY-MM-DD HH:MM:SS``. Every other new row goes
through the per-row path, which accepts it or gives the reason it is quarantined. Both paths
therefore give the same rows, digests and reasons; the columnar one just takes the common case
off the Python interpreter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from types import SimpleNamespace

import polars as pl
import pyarrow as pa

from liger_warehouse.model.digests import PREFIX
from liger_warehouse.model.revisions import RevisionRef
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.model.versions import parse_version
from liger_warehouse.model.workload import parse_config
from liger_warehouse.normalize.csvfile import COLUMNS, MAX_ROW_CHARS, CsvFile, Record
from liger_warehouse.normalize.dimensions import Dimensions
from liger_warehouse.normalize.rows import CONTROL_CHARACTERS, FUTURE_SLACK

FACT = pl.from_arrow(SCHEMAS["fact_result"].empty_table()).schema
MEMBER = SCHEMAS["fact_revision_member"]
# Forms on which Python's float()/strptime() and Polars' parsers agree value for value.
PLAIN_NUMBER = r"^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
PLAIN_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} ([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$"
NEEDS_QUOTES = r'[,"\r\n]'
REQUIRED = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit")
QUANTILES = {"p50": "y_value_50", "p20": "y_value_20", "p80": "y_value_80"}

# A new row the per-row path turns into a fact_result row, or refuses with ValueError.
SlowRow = Callable[[Record, str], dict]


@dataclass
class Normalized:
    new: pl.DataFrame  # fact_result rows first seen in this revision, in file order
    members: pa.Table  # fact_revision_member rows: every record that is a result
    rejected: list[tuple[Record, str]]  # records to quarantine, with the reason


def result_digests(texts: list[str], source: str, source_key: str) -> list[str]:
    """``flat_digest(result_identity(source, source_key, text))`` of every text.

    The identity's keys sort as row, source, source_key, so only the row's JSON string varies.
    """
    tail = f',"source":{encode_basestring(source)},"source_key":{encode_basestring(source_key)}}}'
    sha = hashlib.sha256
    return [PREFIX + sha(('{"row":' + encode_basestring(t) + tail).encode()).hexdigest() for t in texts]


def normalize(
    parsed: CsvFile,
    ref: RevisionRef,
    rev_digest: str,
    known: set[str],
    slow: SlowRow,
    fast: Callable[[list[str], list[int]], pl.DataFrame] | None,
) -> Normalized:
    """One revision's new results, members and rejected records.

    ``ref`` has the revision's source and source_key; ``known`` (the source's result digests)
    gains the new ones. ``fast`` types the rows it can vouch for (see ``ColumnarRows``); None
    sends every new row through ``slow``.
    """
    texts = parsed.texts
    digests = result_digests(texts, ref.source, ref.source_key)
    first = _first_new(digests, known)
    typed = fast([texts[i] for i in first], first) if fast and first else _empty()
    done = set(typed["idx"].to_list())
    rows, reasons = _per_row([i for i in first if i not in done], parsed, digests, slow)
    if rows:
        typed = pl.concat([typed, pl.DataFrame(rows, schema={**FACT, "idx": pl.Int64})])
    typed = typed.with_columns(result_digest=pl.Series(digests, dtype=pl.String).gather(typed["idx"]))
    new = (
        typed.sort("idx")
        .drop("idx")
        .with_columns(first_revision_digest=pl.lit(rev_digest), last_revision_digest=pl.lit(rev_digest))
    )
    known.update(new["result_digest"].to_list())
    rejected = [(parsed.record(i), reasons[d]) for i, d in enumerate(digests) if d in reasons] if reasons else []
    return Normalized(new.select(FACT.names()), _members(parsed, digests, reasons, rev_digest), rejected)


def _per_row(indices: list[int], parsed: CsvFile, digests: list[str], slow: SlowRow) -> tuple[list, dict]:
    """The rows of ``indices`` through the per-row path: fact rows, and reasons by digest."""
    rows, reasons = [], {}
    for i in indices:
        try:
            rows.append({**slow(parsed.record(i), digests[i]), "idx": i})
        except ValueError as exc:
            reasons[digests[i]] = str(exc)
    return rows, reasons


def _first_new(digests: list[str], known: set[str]) -> list[int]:
    """Index of the first record of each digest the source does not hold yet."""
    if known.isdisjoint(digests) and len(set(digests)) == len(digests):
        return list(range(len(digests)))  # the common case of a new source: every record
    seen: set[str] = set()
    first = []
    for i, d in enumerate(digests):
        if d not in known and d not in seen:
            seen.add(d)
            first.append(i)
    return first


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema={**FACT, "idx": pl.Int64})


def _members(parsed: CsvFile, digests: list[str], rejected: dict, rev_digest: str) -> pa.Table:
    columns = (parsed.ordinals, parsed.line_numbers, digests, parsed.suffixes)
    if rejected:
        keep = [i for i, d in enumerate(digests) if d not in rejected]
        columns = tuple([column[i] for i in keep] for column in columns)
    ordinals, line_numbers, results, suffixes = columns
    return pa.table(
        {
            "revision_digest": pa.array([rev_digest] * len(results), pa.string()),
            "ordinal": pa.array(ordinals, pa.int32()),
            "line_number": pa.array(line_numbers, pa.int32()),
            "result_digest": pa.array(results, pa.string()),
            "line_suffix": pa.array(suffixes, pa.string()),
        },
        schema=MEMBER,
    )


class ColumnarRows:
    """Types the new rows of one revision whose every field is in plain form (``__call__``)."""

    def __init__(
        self,
        positions: tuple[int, ...],
        source: str,
        source_key: str,
        stem: str | None,
        now: datetime,
        dims: DimensionCache,
    ) -> None:
        self.positions, self.stem, self.now, self.dims = positions, stem, now, dims
        self.source, self.source_key = source, source_key

    def __call__(self, texts: list[str], idx: list[int]) -> pl.DataFrame:
        fields = _fields(texts, self.positions)
        if fields is None:
            return _empty()
        typed = _typed(fields.with_columns(text=pl.Series(texts, dtype=pl.String), idx=pl.Series(idx, dtype=pl.Int64)))
        plain = typed.filter(_plain(typed, self.now))
        if plain.is_empty():
            return _empty()
        return self._fact_rows(self.dims.attach(plain, self.stem))

    def _fact_rows(self, df: pl.DataFrame) -> pl.DataFrame:
        return df.select(
            pl.lit("").alias("result_digest"),  # filled in by normalize from the digests it holds
            "protocol_digest",
            "workload_digest",
            "environment_digest",
            "implementation_digest",
            "series_digest",
            source=pl.lit(self.source),
            source_key=pl.lit(self.source_key),
            metric="metric_name",
            unit="metric_unit",
            p20="p20",
            p50="p50",
            p80="p80",
            observed_at="observed_at",
            liger_version="liger_version",
            first_revision_digest=pl.lit(""),
            last_revision_digest=pl.lit(""),
            is_current=pl.lit(False),
            row_text="text",
            idx="idx",
        ).cast({**FACT, "idx": pl.Int64})


def _fields(texts: list[str], positions: tuple[int, ...]) -> pl.DataFrame | None:
    """The 15 fields of each text, named in canonical order; None when Polars cannot split them
    one row per text (then the per-row path takes them all)."""
    try:
        raw = pl.read_csv(
            "\n".join(texts).encode("utf-8"), has_header=False, infer_schema=False, empty_string_is_null=False
        )
    except pl.exceptions.PolarsError:
        return None
    if raw.height != len(texts) or raw.width != len(COLUMNS):
        return None
    requoted = pl.concat_str([_quoted(c) for c in raw.columns], separator=",")
    raw = raw.with_columns(requoted=requoted)
    named = [pl.col(raw.columns[p]).alias(name) for name, p in zip(COLUMNS, positions, strict=True)]
    return raw.select(*named, "requoted")


def _quoted(name: str) -> pl.Expr:
    """A field as pandas and Python's csv writer quote it (minimal quoting)."""
    c = pl.col(name)
    quoted = '"' + c.str.replace_all('"', '""', literal=True) + '"'
    return pl.when(c.str.contains(NEEDS_QUOTES)).then(quoted).otherwise(c)


def _typed(df: pl.DataFrame) -> pl.DataFrame:
    """Quantiles and timestamp, null wherever the text is not in plain form."""
    numbers = {
        name: pl.when(pl.col(column).str.contains(PLAIN_NUMBER)).then(pl.col(column).cast(pl.Float64, strict=False))
        for name, column in QUANTILES.items()
    }
    stamp = pl.col("timestamp")
    observed = pl.when(stamp.str.contains(PLAIN_TIMESTAMP)).then(
        stamp.str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S", strict=False)
    )
    return df.with_columns(**numbers, observed_at=observed)


def _plain(df: pl.DataFrame, now: datetime) -> pl.Expr:
    """Rows ``parse_row`` would accept, judged on plain forms only (anything else: per-row)."""
    ok = (pl.col("requoted") == pl.col("text")) & (pl.col("text").str.len_chars() <= MAX_ROW_CHARS)
    ok &= ~pl.col("text").str.contains(CONTROL_CHARACTERS)  # parse_row quarantines those
    for name in QUANTILES:
        ok &= pl.col(name).is_not_null() & pl.col(name).is_finite()
    ok &= (pl.col("p20") <= pl.col("p50")) & (pl.col("p50") <= pl.col("p80"))
    stamp = pl.col("observed_at")
    ok &= stamp.is_not_null() & (stamp.dt.year() >= 1) & (stamp <= now + FUTURE_SLACK)
    checks = {c: _not_blank for c in (*REQUIRED, "gpu_name")}
    checks |= {"extra_benchmark_config_str": _config_ok, "liger_version": _version_ok}
    for column, good in checks.items():
        bad = [v for v in df[column].unique().to_list() if not good(v)]
        if bad:
            ok &= ~pl.col(column).is_in(bad)
    return ok


def _not_blank(text: str) -> bool:
    return bool(text.strip())


def _config_ok(text: str) -> bool:
    try:
        parse_config(text)
    except ValueError:
        return False
    return True


def _version_ok(text: str) -> bool:
    return parse_version(text) is not None


class DimensionCache:
    """Dimension digests per distinct key, computed through ``Dimensions`` once per key."""

    def __init__(self, dims: Dimensions) -> None:
        self.dims = dims
        self.memo: dict[tuple, str] = {}

    def attach(self, df: pl.DataFrame, stem: str | None) -> pl.DataFrame:
        d = self.dims
        df = self._attach(
            df,
            "protocol_digest",
            ("kernel_operation_mode", "metric_name", "metric_unit"),
            lambda k: d.protocol(SimpleNamespace(mode=k[0], metric=k[1], unit=k[2]), stem),
            stem,
        )
        df = self._attach(
            df,
            "workload_digest",
            ("kernel_name", "x_name", "x_label", "x_value", "extra_benchmark_config_str"),
            self._workload,
        )
        df = self._attach(
            df, "environment_digest", ("gpu_name",), lambda k: d.environment(SimpleNamespace(gpu_name=k[0]))
        )
        df = self._attach(
            df,
            "implementation_digest",
            ("kernel_provider", "liger_version"),
            lambda k: d.implementation(SimpleNamespace(provider=k[0], liger_version=k[1]), stem),
            stem,
        )
        return df.with_columns(series_digest=pl.Series(self._series(df, stem), dtype=pl.String))

    def _series(self, df: pl.DataFrame, stem: str | None) -> list[str]:
        """Series digests row by row: within one run nearly every row is its own series, so a
        dictionary lookup per row is cheaper than a unique and a join."""
        cols = ("protocol_digest", "workload_digest", "environment_digest", "kernel_provider")
        memo, series = self.memo, self.dims.series
        out = []
        for key in zip(*(df[c].to_list() for c in cols), strict=True):
            digest = memo.get((stem, *key))
            if digest is None:
                p, w, e, provider = key
                digest = memo[(stem, *key)] = series(SimpleNamespace(provider=provider), stem, p, w, e)
            out.append(digest)
        return out

    def _workload(self, k: tuple) -> str:
        kernel, x_name, x_label, x_value, config_text = k
        row = SimpleNamespace(
            kernel=kernel,
            x_name=x_name,
            x_label=x_label,
            x_value=x_value,
            config_text=config_text,
            config=parse_config(config_text),
        )
        return self.dims.workload(row)

    def _attach(self, df: pl.DataFrame, name: str, cols: tuple[str, ...], compute, stem: str | None = None):
        keys = df.select(cols).unique(maintain_order=True)
        values = []
        for key in keys.iter_rows():
            memo = (name, stem, *key)
            if memo not in self.memo:
                self.memo[memo] = compute(key)
            values.append(self.memo[memo])
        lookup = keys.with_columns(pl.Series(name, values, dtype=pl.String))
        return df.join(lookup, on=list(cols), how="left", maintain_order="left")
