"""deploy/dagster.yaml: valid for Dagster's instance schema, and an instance starts from it."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import dagster as dg
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.instance.ref import InstanceRef

from liger_warehouse.settings import EXECUTOR
from pipelines.defs.schedules import LAUNCHED_BY, REFRESH_TAGS, refresh_executor
from tests.conftest import env
from tests.deploy_instance import DEPLOY, PRODUCTION_CONFIG, local_dagster_home

PG_ENV = {
    "DAGSTER_PG_USERNAME": "dagster",
    "DAGSTER_PG_PASSWORD": "secret",
    "DAGSTER_PG_HOST": "postgres.internal",
    "DAGSTER_PG_DB": "dagster",
    "DAGSTER_PG_PORT": "5432",
}


def test_production_config_matches_the_instance_schema():
    with env(**PG_ENV):
        config, custom_class = dagster_instance_config(str(DEPLOY))
    assert custom_class is None
    db = config["storage"]["postgres"]["postgres_db"]
    # Credentials come from the environment, never from the file.
    assert all(isinstance(db[k], dict) and "env" in db[k] for k in ("username", "password", "hostname"))
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"


def test_one_refresh_at_a_time_is_the_job_tag():
    config = yaml.safe_load(PRODUCTION_CONFIG.read_text())
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": next(iter(REFRESH_TAGS)), "limit": 1} in limits


def test_an_instance_starts_from_it_with_the_queue_limits(tmp_path: Path):
    home = local_dagster_home(tmp_path / "home")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert type(instance.run_launcher).__name__ == "DefaultRunLauncher"
        queue = instance.get_concurrency_config().run_queue_config
        assert queue.max_concurrent_runs == 4
        assert queue.tag_concurrency_limits == [{"key": "liger-warehouse/refresh", "limit": 1}]
        assert instance.run_monitoring_enabled and instance.run_retries_enabled


def test_storage_is_dagster_postgres(tmp_path: Path):
    (tmp_path / "dagster.yaml").write_text(PRODUCTION_CONFIG.read_text())
    with env(**PG_ENV):
        ref = InstanceRef.from_dir(str(tmp_path))
    storages = (ref.run_storage_data, ref.event_storage_data, ref.schedule_storage_data)
    assert {s.module_name for s in storages} == {"dagster_postgres"}
    if importlib.util.find_spec("dagster_postgres") is None:
        return  # the rest needs `pip install -e '.[deploy]'`
    with env(**PG_ENV):
        for data in storages:
            cls = getattr(importlib.import_module(data.module_name), data.class_name)
            result = validate_config(cls.config_type(), data.config_dict)
            assert result.success, result.errors


def test_the_executor_is_chosen_by_the_environment():
    with env(**{EXECUTOR: "multiprocess", "LIGER_WAREHOUSE_MAX_CONCURRENT": "2"}):
        assert refresh_executor().name == "multiprocess"
    with env(**{EXECUTOR: None}):
        assert refresh_executor().name == "in_process"


def test_runs_say_who_launched_them():
    """The schedule's runs say "schedule"; a refresh launched by hand (UI, `dg launch`) keeps the
    job's "manual"; `liger-warehouse refresh` and the sensor say "cli" and "sensor"
    (tests/test_dagster_instance.py). Every refresh carries the one-at-a-time tag."""
    from pipelines.definitions import load

    defs = load()
    refresh = defs.resolve_job_def("refresh")
    assert refresh.tags[LAUNCHED_BY] == "manual" and REFRESH_TAGS.items() <= refresh.tags.items()
    assert defs.resolve_job_def("outputs").tags[LAUNCHED_BY] == "manual"
    with dg.build_schedule_context() as context:
        (request,) = defs.resolve_schedule_def("nightly_refresh").evaluate_tick(context).run_requests
    assert request.tags[LAUNCHED_BY] == "schedule"
