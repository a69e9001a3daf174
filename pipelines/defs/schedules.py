"""The refresh job, its nightly schedule, and the outputs job that follows every refresh.

The refresh fetches upstream, then publishes the lake's next snapshot in one transaction. The outputs
(the full kernelindex export and the HTML report) cover the whole history, so they run as their
own job after each successful refresh instead of lengthening the refresh itself.
"""

import dagster as dg

from liger_warehouse import settings

# Who launched a run: "cli" (liger-warehouse), "schedule", "sensor", else "manual" (the UI,
# `dg launch`, `dagster job launch`).
LAUNCHED_BY = "liger-warehouse/launched-by"
# Every refresh carries this tag, whoever launched it: deploy/dagster.yaml runs one at a time.
REFRESH_TAGS = {"liger-warehouse/refresh": "true"}


def refresh_executor() -> dg.ExecutorDefinition:
    """In-process by default: the steps are short and mostly sequential. Production sets
    ``LIGER_WAREHOUSE_EXECUTOR=multiprocess`` (see deploy/README.md): each step in its own
    process, independent ones (the audit and the derived tables) side by side."""
    s = settings.current()
    if s.executor == "multiprocess":
        return dg.multiprocess_executor.configured({"max_concurrent": s.max_concurrent}, name="multiprocess")
    return dg.in_process_executor


OUTPUTS = dg.AssetSelection.groups("exports", "report")
IMPORTS = dg.AssetSelection.groups("imports")  # the import job's own first step
MAINTENANCE = dg.AssetSelection.groups("maintenance")

refresh_job = dg.define_asset_job(
    "refresh",
    selection=dg.AssetSelection.all() - OUTPUTS - IMPORTS - MAINTENANCE,
    description="Pull every new upstream revision and publish it as the lake's next snapshot.",
    tags={**REFRESH_TAGS, LAUNCHED_BY: "manual"},
    executor_def=refresh_executor(),
)


def is_refresh(run: dg.DagsterRun) -> bool:
    """A run of the refresh job that carries the refresh tags, whoever launched it."""
    return run.job_name == refresh_job.name and REFRESH_TAGS.items() <= run.tags.items()


def warehouse_config(run: dg.DagsterRun) -> dict | None:
    """The warehouse resource's run config the run was given (its root), if any."""
    return run.run_config.get("resources", {}).get("warehouse")


nightly_refresh = dg.ScheduleDefinition(
    name="nightly_refresh",
    job=refresh_job,
    cron_schedule=settings.current().schedule,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    tags={LAUNCHED_BY: "schedule"},
)

outputs_job = dg.define_asset_job(
    "outputs",
    selection=OUTPUTS,
    description="Write the kernelindex export and the HTML report of the lake's newest snapshot.",
    tags={LAUNCHED_BY: "manual"},
    executor_def=dg.in_process_executor,
)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    # Not monitored_jobs=[refresh_job]: that matches only runs launched through this code
    # location, and `liger-warehouse refresh` runs the job in its own process, with no code
    # location. Which runs count is decided below instead.
    monitor_all_code_locations=True,
    request_job=outputs_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def outputs_after_refresh(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    """Refresh the exports and the report once a refresh has published (launched from the UI,
    the schedule or `liger-warehouse refresh`), in the warehouse that refresh wrote: a refresh
    given its root as run config (as `liger-warehouse refresh -w` does) hands it on; without
    one both runs read the code location's settings."""
    run = context.dagster_run
    if not is_refresh(run):
        return dg.SkipReason(f"run {run.run_id} of {run.job_name} is not a refresh of this warehouse")
    warehouse = warehouse_config(run)
    return dg.RunRequest(
        run_key=run.run_id,
        run_config={"resources": {"warehouse": warehouse}} if warehouse else {},
        tags={LAUNCHED_BY: "sensor"},
    )
