"""The non-blocking check ``no_new_regressions``: it warns when a published snapshot brought in
regressions, steps of the ``regressions`` view into a build the refresh created or changed
(liger_warehouse/audit/regression_watch.py)."""

import dagster as dg

from liger_warehouse.audit import regression_watch
from liger_warehouse.lake.location import Lake

NAME = "no_new_regressions"
# The steps the regressions view judges are this table's rows.
ASSET = "fact_build_step"


def regression_check_spec() -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        NAME,
        asset=ASSET,
        blocking=False,
        description="Warns when this refresh brought in regressions: steps of the `regressions` view "
        "(sql/views/regressions.sql, docs/VERDICTS.md) into a build this refresh created or changed.",
    )


def regression_check_result(lake: Lake, snapshot: int) -> dg.AssetCheckResult:
    """The check's result for the newly published ``snapshot``, against the snapshot before it."""
    new = regression_watch.new_in_snapshot(lake, snapshot)
    if not new.available:
        return dg.AssetCheckResult(
            asset_key=ASSET,
            check_name=NAME,
            passed=True,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"not checked: {new.note}",
            metadata={"new_regressions": 0, "note": new.note, "snapshot": snapshot},
        )
    return dg.AssetCheckResult(
        asset_key=ASSET,
        check_name=NAME,
        passed=not new.rows,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{len(new.rows)} regressions new in this refresh" if new.rows else "no new regressions",
        metadata={
            "new_regressions": len(new.rows),
            "regressions": dg.MetadataValue.md(regression_watch.markdown(new)),
            "compared": new.compared or "",
            "snapshot": snapshot,
        },
    )
