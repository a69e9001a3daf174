"""The nightly digest: what each new run changed, written beside the warehouse and sent on."""

import dagster as dg

from liger_warehouse.alerts.digest import (
    build_digest,
    digest_names,
    new_steps,
    render_markdown,
    runs_in_order,
    write_digest,
)
from liger_warehouse.alerts.github_issues import file_issues
from liger_warehouse.alerts.webhook import parse_webhooks, send_digest
from liger_warehouse.lake.connect import read_lake
from pipelines.defs.resources import AlertResource, WarehouseResource


@dg.asset(group_name="alerts", kinds={"duckdb", "markdown"}, deps=["fact_change_point"])
def regression_digest(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, alerts: AlertResource
) -> dg.MaterializeResult:
    """``<warehouse>/digests/<run>.md|json``: the regressions and improvements of each new gh-pages
    run against the run before it, by kernel and pass, POSTed to the alert webhooks."""
    hooks = parse_webhooks(alerts.webhook)  # a bad setting fails here, before anything is written
    tracker = alerts.issue_tracker()
    storage = warehouse.storage()
    with read_lake(warehouse.lake()) as con:
        steps, before = new_steps(runs_in_order(con), digest_names(storage))
        if not steps:
            return dg.MaterializeResult(metadata={"digest": "no new run"})
        digest = build_digest(con, steps, before)
    markdown = render_markdown(digest)
    key = write_digest(storage, digest, markdown)
    failures = send_digest(hooks, digest, markdown)
    issues, issue_failures = file_issues(tracker, digest) if tracker else ([], [])
    failures += issue_failures
    for failure in failures:
        context.log.warning(failure)
    return dg.MaterializeResult(
        metadata={
            "digest": dg.MetadataValue.path(storage.uri(key)),
            "runs": [entry["run"] for entry in digest["runs"]],
            "regressions": sum(entry["regressions"] for entry in digest["runs"]),
            "improvements": sum(entry["improvements"] for entry in digest["runs"]),
            "webhooks": len(hooks),
            "alert_failures": len(failures),
            "github_issues": issues,
            "summary": dg.MetadataValue.md(markdown),
        }
    )
