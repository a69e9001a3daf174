"""The lake: one publishing step ingests the new revisions, computes the change points, creates
the derived tables and views of ``sql/`` and runs the blocking checks, in one DuckLake
transaction that commits only when every check passes."""

import dagster as dg

from liger_warehouse.audit import checks, regression_watch
from liger_warehouse.build.publish import ChecksFailed, PublishConflict, Published, publish
from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.objects import sql_objects
from liger_warehouse.model.table_docs import DESCRIPTIONS, column_description
from liger_warehouse.model.tables import STORED
from liger_warehouse.runtime.refresh_summary import repository_url, revisions_markdown
from pipelines.defs.resources import ChangePointResource, UpstreamResource, WarehouseResource
from pipelines.defs.upstream.assets import FetchedUpstream

GROUP = "warehouse"
# Shown in the UI beside each check; a failure of any of them stops the publish.
CHECKS = {
    "digests_unique": ("fact_result", "Every digest in every dimension and in fact_result is unique."),
    "no_orphan_digests": ("fact_result", "Every digest a fact references exists in its dimension."),
    "p20_le_p50_le_p80": ("fact_result", "p20 <= p50 <= p80 in every result."),
    "every_row_reconciled": (
        "fact_revision_member",
        "Every row of every new upstream revision, recounted from its raw snapshot, is in fact_result "
        "(via fact_revision_member) or in quarantined_row.",
    ),
}
# Which check each outcome of liger_warehouse/audit/checks.py counts towards.
OUTCOME_CHECK = {
    "digests_unique": "digests_unique",
    "p20_le_p50_le_p80": "p20_le_p50_le_p80",
    "every_row_reconciled": "every_row_reconciled",
    "rows_match_raw_snapshot": "every_row_reconciled",
}


def table_descriptions() -> dict[str, str]:
    """Every lake table's description: the stored tables' from table_docs, each derived table's
    from the header of its SQL file."""
    derived = {f.name: f.description for f in sql_objects() if f.kind == "derived"}
    return {**{name: DESCRIPTIONS[name] for name in STORED}, **derived}


def _specs() -> list[dg.AssetSpec]:
    # Built in a function: the defs loader would register module-level specs a second time.
    return [
        dg.AssetSpec(
            name,
            group_name=GROUP,
            kinds={"ducklake", "parquet"},
            description=description,
            deps=["upstream_snapshots"],
            skippable=True,
        )
        for name, description in table_descriptions().items()
    ]


# Warns, never blocks: a refresh that brings regressions in is still the truth of upstream.
REGRESSION_CHECK = "no_new_regressions"
REGRESSION_ASSET = "dim_build"


def check_specs() -> list[dg.AssetCheckSpec]:
    return [
        *(
            dg.AssetCheckSpec(name, asset=table, blocking=True, description=description)
            for name, (table, description) in CHECKS.items()
        ),
        dg.AssetCheckSpec(
            REGRESSION_CHECK,
            asset=REGRESSION_ASSET,
            blocking=False,
            description="Warns when this refresh brought in regressions: steps of the `regressions` view "
            "(sql/views/regressions.sql, docs/VERDICTS.md) into a build this refresh created or changed.",
        ),
    ]


def regression_result(new: regression_watch.Regressions) -> dg.AssetCheckResult:
    """The warning check of the regressions a publish brought in."""
    passed = not new.rows if new.available else True
    if not new.available:
        description = f"not checked: {new.note}"
    else:
        description = f"{len(new.rows)} regressions new in this refresh" if new.rows else "no new regressions"
    return dg.AssetCheckResult(
        asset_key=REGRESSION_ASSET,
        check_name=REGRESSION_CHECK,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "new_regressions": len(new.rows),
            "regressions": dg.MetadataValue.md(regression_watch.markdown(new)),
            **({"note": new.note} if not new.available else {"compared": new.compared}),
        },
    )


def check_results(outcomes: list[checks.CheckOutcome]) -> list[dg.AssetCheckResult]:
    """One result per check, adding up the outcomes it stands for."""
    by_check: dict[str, list[checks.CheckOutcome]] = {name: [] for name in CHECKS}
    for outcome in outcomes:
        by_check[OUTCOME_CHECK.get(outcome.name, "no_orphan_digests")].append(outcome)
    results = []
    for name, found in by_check.items():
        failures = sum(o.failures for o in found)
        examples = [f"{o.table}.{o.name}: {e}" for o in found for e in o.examples][:10]
        results.append(
            dg.AssetCheckResult(
                asset_key=CHECKS[name][0],
                check_name=name,
                passed=failures == 0,
                metadata={
                    "failures": failures,
                    "examples": dg.MetadataValue.md("\n".join(f"- {e}" for e in examples) or "none"),
                },
            )
        )
    return results


def table_metadata(warehouse: WarehouseResource, published: Published) -> dict[str, dict]:
    """Per table, as the new snapshot holds it: rows and columns, with their descriptions."""
    tables = list(table_descriptions())
    # One statement for every count and one for every column: a statement per table cost a
    # refresh of the real history 0.4 s.
    counts = ", ".join(f"(select count(*) from {table})" for table in tables)
    with open_lake(warehouse.lake(), read_only=True, snapshot=published.snapshot) as con:
        rows = dict(zip(tables, con.execute(f"select {counts}").fetchone(), strict=True))
        columns = con.execute(
            "select table_name, column_name, data_type from duckdb_columns() "
            "where database_name = current_database() and schema_name = 'main' order by column_index"
        ).fetchall()
    schemas: dict[str, list[dg.TableColumn]] = {table: [] for table in tables}
    for table, name, kind in columns:
        if table in schemas:
            schemas[table].append(dg.TableColumn(name, kind, description=column_description(table, name)))
    return {
        table: {
            "dagster/row_count": rows[table],
            "dagster/column_schema": dg.TableSchema(columns=schemas[table]),
            "snapshot": published.snapshot,
        }
        for table in tables
    }


def revisions_metadata(summary: dict, upstream: UpstreamResource) -> dg.MetadataValue:
    """The revisions a refresh ingested, each linked to its commit on GitHub."""
    repo = repository_url(upstream.upstream)
    return dg.MetadataValue.md(revisions_markdown(summary.get("revisions", []), repo))


def publish_results(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, published: Published, extra: dict[str, dict]
):
    """The materializations and check results of one publishing transaction."""
    summary = published.summary
    for message in summary["rejected"] + summary["warnings"]:
        context.log.warning(message)
    if published.snapshot is None:
        context.log.info("nothing new to publish: the lake stays at its snapshot")
        yield from (
            dg.AssetCheckResult(asset_key=table, check_name=name, passed=True, metadata={"audited": "nothing new"})
            for name, (table, _) in CHECKS.items()
        )
        yield regression_result(regression_watch.Regressions(note="nothing new was published"))
        return
    for table, metadata in table_metadata(warehouse, published).items():
        yield dg.MaterializeResult(asset_key=table, metadata={**metadata, **extra.get(table, {})})
    yield from check_results(published.outcomes)
    yield regression_result(regression_watch.new_in_snapshot(warehouse.lake(), published.snapshot))


@dg.multi_asset(specs=_specs(), check_specs=check_specs(), ins={"upstream_snapshots": dg.AssetIn()}, can_subset=False)
def lake_tables(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    upstream: UpstreamResource,
    change_points: ChangePointResource,
    upstream_snapshots: FetchedUpstream,
):
    """Publish every new upstream revision as the next snapshot of the lake, in one transaction."""
    try:
        published = publish(
            warehouse.lake(),
            warehouse.raw(),
            upstream_snapshots.listing,
            upstream_snapshots.contents,
            pool=change_points.pool(context.log),
        )
    except ChecksFailed as exc:
        yield from check_results(exc.outcomes)
        raise dg.Failure(str(exc), allow_retries=False) from None
    except PublishConflict as exc:
        raise dg.Failure(str(exc), allow_retries=False) from exc
    finally:
        change_points.release()
    summary = published.summary
    extra = {
        "fact_result": {
            "results_added": summary["results_added"],
            "results_restated": summary["results_restated"],
            "results_removed": summary["results_removed"],
        },
        "fact_revision_member": {
            "revisions_ingested": summary["revisions_ingested"],
            "revisions": revisions_metadata(summary, upstream),
        },
    }
    if published.change_points is not None:
        counts = published.change_points
        extra["fact_change_point"] = {
            "series": counts.series,
            "series_resumed": counts.resumed,
            "series_unchanged": counts.unchanged,
            "series_from_scratch": counts.from_scratch,
            "points": counts.points,
        }
    yield from publish_results(context, warehouse, published, extra)
