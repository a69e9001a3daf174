"""Derived tables written by SQL models: one ``select`` per table in ``sql/derived/``.

What the common questions need (each series and its sweep, the builds, the points that stand
for a series in a run or a build, each series' noise) is computed once when a generation is
staged, from the staged facts, and published with them as Parquet: the views read these tables
instead of deriving them per query. Models run in ``SQL_MODELS`` order; each sees the staged
tables, the analytic views of ``sql/`` and the models before it.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from liger_warehouse.model.tables import SCHEMAS, SQL_MODELS
from liger_warehouse.serve.database import SQL_DIR, create_views, open_duckdb
from liger_warehouse.store.generations import Generation, GenerationStore, Part

MODEL_DIR = SQL_DIR / "derived"
# Rows in a stable order, so that an unchanged table is the same bytes and keeps its part.
ORDER = {
    "dim_series": ["series_digest"],
    "dim_build": ["build_rank"],
    "fact_run_point": ["run", "series_digest"],
    "fact_build_point": ["build", "series_digest"],
    "fact_series_noise": ["series_digest"],
    "fact_speedup_noise": ["liger_series_digest", "baseline_series_digest"],
}


def model_sql(name: str, model_dir: Path = MODEL_DIR) -> str:
    return (model_dir / f"{name}.sql").read_text()


def _derive(con: duckdb.DuckDBPyConnection, name: str) -> pa.Table:
    data = con.sql(model_sql(name)).arrow()
    if isinstance(data, pa.RecordBatchReader):
        data = data.read_all()
    data = data.select(SCHEMAS[name].names).cast(SCHEMAS[name])
    return data.sort_by([(column, "ascending") for column in ORDER[name]])


def add_to_generation(gens: GenerationStore, gen: Generation) -> dict[str, Part]:
    """Run every SQL model over staged generation ``gen`` and re-stage it with their tables."""
    parts: dict[str, Part] = {}
    with open_duckdb(gens.storage) as con:
        create_views(con, gen)
        for name in SQL_MODELS:
            data = _derive(con, name)
            parts[name] = gens.write_content_part(name, data)
            # The next models read this one as the staged generation will show it.
            con.register(f"derived_{name}", data)
            con.execute(f"create or replace view {name} as select * from derived_{name}")
    gen.tables.update({name: [part] for name, part in parts.items()})
    gens.stage(gen)
    return parts
