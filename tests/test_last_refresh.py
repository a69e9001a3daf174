"""The warehouse's record of its last refresh (``state/last-refresh.json``), and the sensors that
write it for refreshes launched outside the CLI. The CLI's side, and a sensor in a running
daemon, are in test_cli_warehouse.py and test_dagster_instance.py."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from liger_warehouse.store import last_refresh
from liger_warehouse.store.storage import Storage
from pipelines.defs.last_refresh import (
    refresh_canceled_recorded,
    refresh_failure_recorded,
    refresh_success_recorded,
    refreshed_root,
)
from pipelines.defs.schedules import LAUNCHED_BY, REFRESH_TAGS
from tests.conftest import env

SENSORS = [
    (refresh_success_recorded, dg.DagsterEventType.RUN_SUCCESS, "success"),
    (refresh_failure_recorded, dg.DagsterEventType.RUN_FAILURE, "failure"),
    (refresh_canceled_recorded, dg.DagsterEventType.RUN_CANCELED, "canceled"),
]


def _run(root: Path | dict | None, launched_by: str = "schedule", job: str = "refresh") -> dg.DagsterRun:
    """A run as the daemon sees it; ``root`` is the run config's (a path, ``{"env": VAR}``, none)."""
    given = str(root) if isinstance(root, Path) else root
    config = {"resources": {"warehouse": {"config": {"root": given}}}} if root else {}
    return dg.DagsterRun(job_name=job, run_id=f"{job}-{launched_by}-0001", run_config=config,
                         tags={**REFRESH_TAGS, LAUNCHED_BY: launched_by})  # fmt: skip


def _sensor_sees(sensor: dg.SensorDefinition, event_type: dg.DagsterEventType, run: dg.DagsterRun) -> None:
    """``sensor`` evaluated on ``run`` ending with ``event_type``, as the daemon's tick would."""
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_run(run)
        event = dg.DagsterEvent(event_type_value=event_type.value, job_name=run.job_name)
        sensor(dg.build_run_status_sensor_context(sensor.name, event, instance, run))


@pytest.mark.parametrize(("sensor", "event_type", "outcome"), SENSORS)
def test_each_sensor_records_its_outcome_in_the_root_the_run_refreshed(sensor, event_type, outcome, tmp_path):
    _sensor_sees(sensor, event_type, _run(tmp_path / "warehouse"))
    entry = last_refresh.last(Storage(str(tmp_path / "warehouse")))
    assert (entry.outcome, entry.run_id, entry.launched_by) == (outcome, "refresh-schedule-0001", "schedule")


def test_the_cli_runs_and_other_jobs_are_left_to_others(tmp_path: Path):
    """The CLI records its own runs (with their start); an outputs run is no refresh."""
    for run in (_run(tmp_path, launched_by="cli"), _run(tmp_path, launched_by="sensor", job="outputs")):
        _sensor_sees(refresh_success_recorded, dg.DagsterEventType.RUN_SUCCESS, run)
    assert last_refresh.last(Storage(str(tmp_path))) is None


def test_the_root_is_the_run_config_s_an_env_var_s_or_the_code_location_s(tmp_path: Path):
    with env(LIGER_WAREHOUSE_DIR=str(tmp_path / "default"), ELSEWHERE=str(tmp_path / "elsewhere")):
        assert refreshed_root(_run(tmp_path / "given")) == str(tmp_path / "given")
        assert refreshed_root(_run({"env": "ELSEWHERE"})) == str(tmp_path / "elsewhere")
        assert refreshed_root(_run(None)) == str(tmp_path / "default")


def test_an_older_outcome_never_replaces_a_newer_one(tmp_path: Path):
    """A sensor catching up on an old run's end after the CLI recorded a newer refresh."""
    storage = Storage(str(tmp_path))
    last_refresh.record(storage, "nothing new", launched_by="cli", at=2000.0)
    last_refresh.record(storage, "failure", run_id="old", launched_by="schedule", at=1000.0)
    assert last_refresh.last(storage).describe() == "1970-01-01 00:33:20 UTC, nothing new upstream (no run needed)"
    last_refresh.record(storage, "success", run_id="0123456789", launched_by="manual", at=3000.0)
    said = "1970-01-01 00:50:00 UTC, success (run 01234567, launched by manual)"
    assert last_refresh.last(storage).describe() == said


DAMAGED = {
    "not JSON": "{not json",
    "a field missing": json.dumps({"outcome": "success"}),
    "an unknown outcome": json.dumps({"outcome": "done", "at": 0}),
    "a time that is text": json.dumps({"outcome": "success", "at": "x"}),
    "a time out of range": json.dumps({"outcome": "success", "at": 1e20}),
    "a run id that is a number": json.dumps({"outcome": "success", "at": 0, "run_id": 5}),
}


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_record_is_an_error_naming_the_file_and_a_new_record_replaces_it(damage: str, tmp_path: Path):
    storage = Storage(str(tmp_path))
    storage.write_text(last_refresh.LAST_REFRESH, DAMAGED[damage])
    with pytest.raises(ValueError, match=r"state/last-refresh\.json is not a refresh record: "):
        last_refresh.last(storage)
    last_refresh.record(storage, "started", run_id="r", launched_by="cli")
    assert last_refresh.last(storage).outcome == "started"
