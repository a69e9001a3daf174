"""How each refresh launched outside the CLI ended (the schedule, the UI, `dagster job launch`),
recorded by the daemon in the warehouse that run refreshed, for `liger-warehouse status` to read
without Dagster (liger_warehouse/store/last_refresh.py). The CLI records the runs it launches
itself, "started" included."""

import dagster as dg

from liger_warehouse import settings
from liger_warehouse.store import last_refresh
from liger_warehouse.store.storage import Storage
from pipelines.defs.schedules import LAUNCHED_BY, REFRESH_TAGS, refresh_job


def _refreshed_root(run: dg.DagsterRun) -> str:
    """The root the run was given as run config, else the code location's (as the run used)."""
    config = run.run_config.get("resources", {}).get("warehouse", {}).get("config", {})
    return config.get("root") or settings.current().dir


def _outcome_sensor(status: dg.DagsterRunStatus, outcome: str) -> dg.SensorDefinition:
    @dg.run_status_sensor(
        name=f"refresh_{outcome}_recorded",
        run_status=status,
        monitor_all_code_locations=True,  # as outputs_after_refresh: runs of any location count
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Record a refresh's {outcome} in the warehouse it refreshed (state/last-refresh.json).",
    )
    def record(context: dg.RunStatusSensorContext) -> dg.SkipReason | None:
        run = context.dagster_run
        if run.job_name != refresh_job.name or not REFRESH_TAGS.items() <= run.tags.items():
            return dg.SkipReason(f"run {run.run_id} of {run.job_name} is not a refresh of this warehouse")
        launched_by = run.tags.get(LAUNCHED_BY)
        if launched_by == "cli":
            return dg.SkipReason(f"run {run.run_id} was launched by the CLI, which records it")
        ended = context.instance.get_run_record_by_id(run.run_id)
        at = ended.end_time if ended and ended.end_time else None
        last_refresh.record(Storage(_refreshed_root(run)), outcome, run.run_id, launched_by, at=at)
        return None

    return record


refresh_success_recorded = _outcome_sensor(dg.DagsterRunStatus.SUCCESS, "success")
refresh_failure_recorded = _outcome_sensor(dg.DagsterRunStatus.FAILURE, "failure")
refresh_canceled_recorded = _outcome_sensor(dg.DagsterRunStatus.CANCELED, "canceled")
