"""``liger.duckdb``: what people query."""

import dagster as dg

from pipelines.database import build_database
from pipelines.defs.resources import WarehouseResource


@dg.asset(group_name="duckdb", kinds={"duckdb"}, deps=["published_generation"])
def liger_duckdb(warehouse: WarehouseResource) -> dg.MaterializeResult:
    """The DuckDB database at ``<warehouse>/liger.duckdb``: a view per published table plus
    every analytic view in ``sql/``. Rebuilt beside the old file and moved into place."""
    gens = warehouse.generations()
    gen = gens.current()
    path = warehouse.database_path()
    views = build_database(gens, gen, path)
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            "generation": gen.id,
            "views": ", ".join(views),
        }
    )
