"""Warehouse results as the inputs of ``kernelindex_record``, read in Arrow batches.

``kernelindex_results`` is ``fact_result`` joined with its four dimensions: one row per result
with every key ``kernelindex_record`` reads, plus ``source``, ``is_current``, ``backend`` and
the revision digests for filtering. Rows are streamed batch by batch from DuckDB, so an export
never holds the whole history in Python objects.

Filters are structured (``ResultFilter``) and bound as parameters. ``ResultFilter.where`` is
the one exception: trusted-user SQL, run as a single SELECT on a connection that can read
nothing but the lake's own files (``connect`` locks it down).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import duckdb

from liger_warehouse.lake.connect import read_lake
from liger_warehouse.lake.location import Lake
from liger_warehouse.model.digests import digest

RESULTS = "kernelindex_results"
BATCH_ROWS = 8192
RESULTS_VIEW = f"""
create or replace temp view {RESULTS} as
select f.result_digest, f.source, f.source_key, f.is_current,
       w.kernel, p.timed_pass as operation_mode, i.provider, i.backend,
       f.metric, f.unit, e.gpu_name,
       w.x_name, w.x_label, w.x_value, w.config_json, w.slug as workload_slug,
       f.liger_version, f.p20, f.p50, f.p80, f.observed_at,
       f.protocol_digest, f.workload_digest, f.environment_digest, f.implementation_digest,
       f.series_digest, f.first_revision_digest, f.last_revision_digest
from fact_result f
join dim_protocol p using (protocol_digest)
join dim_workload w using (workload_digest)
join dim_environment e using (environment_digest)
join dim_implementation i using (implementation_digest)
"""
# What kernelindex_record reads, and the result digest: the other columns are only for filters.
RECORD_COLUMNS = (
    "result_digest, kernel, operation_mode, provider, metric, unit, gpu_name, x_name, x_label, x_value, "
    "config_json, workload_slug, liger_version, p20, p50, p80, observed_at, "
    "protocol_digest, workload_digest, environment_digest, implementation_digest"
)
# The GPU slug of kernelindex (liger_warehouse.model.catalog.gpus.gpu_slug), in SQL, so --gpu takes either.
GPU_SLUG_SQL = "trim(regexp_replace(lower(gpu_name), '[^a-z0-9]+', '-', 'g'), '-')"


class UnsafeWhere(ValueError):
    """A ``--where`` predicate that is not one plain SELECT condition."""


@dataclass(frozen=True)
class ResultFilter:
    """A subset of results; empty tuples mean no restriction. Values are bound, never formatted."""

    kernels: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    current_only: bool = False
    where: str | None = None

    def is_everything(self) -> bool:
        return self == ResultFilter()

    def key(self) -> str:
        """8 hex naming this subset, for file names (stable across runs)."""
        return digest(asdict(self)).removeprefix("sha256:")[:8]

    def sql(self) -> tuple[str, list[Any]]:
        """A ``where`` clause over ``kernelindex_results`` and its parameters."""
        terms: list[str] = []
        params: list[Any] = []
        for column, values in (
            ("kernel", self.kernels),
            ("provider", self.providers),
            ("liger_version", self.versions),
            ("metric", self.metrics),
            ("source", self.sources),
        ):
            if values:
                terms.append(f"{column} in ({_marks(values)})")
                params += values
        if self.gpus:
            terms.append(f"(gpu_name in ({_marks(self.gpus)}) or {GPU_SLUG_SQL} in ({_marks(self.gpus)}))")
            params += [*self.gpus, *self.gpus]
        if self.current_only:
            terms.append("is_current")
        if self.where:
            terms.append(f"({self.where})")
        return (" where " + " and ".join(terms) if terms else ""), params


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" for _ in values)


def connect(lake: Lake, as_of: str | None = None) -> duckdb.DuckDBPyConnection:
    """A reader of ``lake`` (at snapshot ``as_of``, a snapshot id or a timestamp, when given)
    with the ``kernelindex_results`` view, locked down: it reads the lake's own files and
    nothing else, for good."""
    return with_results_view(read_lake(lake, as_of))


def with_results_view(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con``, a lake reader, with the ``kernelindex_results`` view (closed if that fails)."""
    try:
        con.execute(RESULTS_VIEW)
    except BaseException:
        con.close()
        raise
    return con


def select_sql(filt: ResultFilter, columns: str = "*", order: bool = True) -> tuple[str, list[Any]]:
    """The query of the filtered results, refusing a ``where`` that is not one SELECT."""
    clause, params = filt.sql()
    query = f"select {columns} from {RESULTS}{clause}" + (" order by result_digest" if order else "")
    if filt.where is not None:
        _check_single_select(query)
    return query, params


def _check_single_select(query: str) -> None:
    # `con.sql` runs every statement before the last one: "1=1; drop view x" must not get there.
    try:
        with duckdb.connect() as parser:
            statements = parser.extract_statements(query)
    except duckdb.Error as exc:
        raise UnsafeWhere(f"--where does not parse: {exc}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise UnsafeWhere("--where must be one SQL condition, not further statements")


def count_results(con: duckdb.DuckDBPyConnection, filt: ResultFilter) -> int:
    query, params = select_sql(filt, "count(*)", order=False)
    return con.sql(query, params=params).fetchall()[0][0]


def iter_results(
    con: duckdb.DuckDBPyConnection, filt: ResultFilter, batch_rows: int = BATCH_ROWS
) -> Iterator[list[dict[str, Any]]]:
    """The filtered results in ``result_digest`` order, as ``kernelindex_record`` inputs."""
    query, params = select_sql(filt, RECORD_COLUMNS)
    configs: dict[str, dict] = {}
    for batch in con.sql(query, params=params).to_arrow_reader(batch_rows):
        rows = batch.to_pylist()
        for row in rows:
            text = row["config_json"]
            if text not in configs:  # a few hundred distinct workloads: parse each config once
                configs[text] = json.loads(text)
            row["config"] = configs[text]
        yield rows
