"""How each refresh launched outside the CLI ended (the schedule, the UI, `dagster job launch`),
recorded by the daemon in the warehouse that run refreshed, for `liger-warehouse status` to read
without Dagster (liger_warehouse/store/last_refresh.py). The CLI records the runs it launches
itself, "started" included; these runs have no "started", as the daemon sees them only at their
end."""

import dagster as dg

from liger_warehouse import settings
from liger_warehouse.store import last_refresh
from liger_warehouse.store.storage import Storage
from pipelines.defs.schedules import LAUNCHED_BY, is_refresh, warehouse_config


def refreshed_root(run: dg.DagsterRun) -> str:
    """The root the run was given as run config (a value, or ``{"env": VAR}``), else this code
    location's, as the run itself used."""
    root = (warehouse_config(run) or {}).get("config", {}).get("root")
    if isinstance(root, dict) and "env" in root:
        root = settings.named_by_run_config(root["env"])
    return root or settings.current().dir


def record_outcome(context: dg.RunStatusSensorContext, outcome: last_refresh.Outcome) -> None:
    """Record the run's ``outcome``, stamped with its end, unless the CLI launched it (the CLI
    records its own) or it is no refresh. Returns None either way, so that one tick goes on to
    the next run (a SkipReason would end the tick)."""
    run = context.dagster_run
    launched_by = run.tags.get(LAUNCHED_BY)
    if not is_refresh(run) or launched_by == "cli":
        return
    ended = context.instance.get_run_record_by_id(run.run_id)
    storage = Storage(refreshed_root(run))
    last_refresh.record(storage, outcome, run_id=run.run_id, launched_by=launched_by, at=ended and ended.end_time)


def _outcome_sensor(status: dg.DagsterRunStatus, outcome: last_refresh.Outcome) -> dg.SensorDefinition:
    # This code location's runs only: the CLI's runs, which have none, record themselves.
    @dg.run_status_sensor(
        name=f"refresh_{outcome}_recorded",
        run_status=status,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Record a refresh's {outcome} in the warehouse it refreshed (state/last-refresh.json).",
    )
    def record(context: dg.RunStatusSensorContext) -> None:
        record_outcome(context, outcome)

    return record


refresh_success_recorded = _outcome_sensor(dg.DagsterRunStatus.SUCCESS, "success")
refresh_failure_recorded = _outcome_sensor(dg.DagsterRunStatus.FAILURE, "failure")
refresh_canceled_recorded = _outcome_sensor(dg.DagsterRunStatus.CANCELED, "canceled")
