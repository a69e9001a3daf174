"""``liger.duckdb``: what people query."""

from pathlib import Path

import dagster as dg

from liger_warehouse.audit import regression_watch
from liger_warehouse.model.tables import SCHEMAS
from liger_warehouse.serve.database import DATABASE, build_database, open_duckdb, publish_database
from pipelines.defs.resources import WarehouseResource


def _regression_check() -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        "no_new_regressions",
        asset="liger_duckdb",
        blocking=False,
        description="Warns when this refresh brought in regressions: steps of the `regressions` view "
        "(sql/views/regressions.sql, docs/VERDICTS.md) into a build this refresh created or changed.",
    )


# liger.duckdb is a catalog of views: one row per view.
CATALOG_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn("view", "string"),
        dg.TableColumn("kind", "string", description="table: a published table; analytic: any other view"),
        dg.TableColumn("columns", "int64"),
    ]
)


def _catalog(warehouse: WarehouseResource, path: Path) -> dg.MetadataValue:
    """The views liger.duckdb serves, read back from the file: proof that every view resolves."""
    with open_duckdb(warehouse.storage(), str(path), read_only=True) as con:
        rows = con.execute(
            "select v.view_name, count(c.column_name) from duckdb_views() v "
            "join duckdb_columns() c on c.table_name = v.view_name and c.schema_name = v.schema_name "
            "where not v.internal group by all order by 1"
        ).fetchall()
    records = [
        dg.TableRecord({"view": name, "kind": "table" if name in SCHEMAS else "analytic", "columns": n})
        for name, n in rows
    ]
    return dg.MetadataValue.table(records, schema=CATALOG_SCHEMA)


def _regression_result(new: regression_watch.Regressions) -> dg.AssetCheckResult:
    if not new.available:
        return dg.AssetCheckResult(
            passed=True,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"not checked: {new.note}",
            metadata={"new_regressions": 0, "note": new.note},
        )
    return dg.AssetCheckResult(
        passed=not new.rows,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{len(new.rows)} regressions new in this refresh" if new.rows else "no new regressions",
        metadata={
            "new_regressions": len(new.rows),
            "regressions": dg.MetadataValue.md(regression_watch.markdown(new)),
            "compared": new.compared or "",
        },
    )


@dg.asset(
    group_name="duckdb",
    kinds={"duckdb"},
    deps=["published_generation"],
    check_specs=[_regression_check()],
)
def liger_duckdb(warehouse: WarehouseResource):
    """The DuckDB database at ``<warehouse>/liger.duckdb``: a view per published table plus
    every analytic view in ``sql/``. Rebuilt beside the old file and moved into place.

    Its metadata shows the newest regressions and the catalog of views (its row count and
    columns: one row per view). The non-blocking check ``no_new_regressions`` warns when the
    refresh brought in regressions that the previous database did not show."""
    gens = warehouse.generations()
    gen = gens.current()
    path = warehouse.database_path()
    build_database(gens, gen, path)
    publish_database(gens.storage, path)
    after = regression_watch.read(gens.storage, path)
    new = regression_watch.new_in_refresh(gens, gen, after)
    catalog = _catalog(warehouse, path)
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(catalog.records),
            "dagster/column_schema": CATALOG_SCHEMA,
            "catalog": catalog,
            "path": dg.MetadataValue.path(gens.storage.uri(DATABASE)),
            "generation": gen.id,
            "regressions": len(after.rows),
            "newest_regressions": dg.MetadataValue.md(regression_watch.markdown(after)),
        }
    )
    yield _regression_result(new)
