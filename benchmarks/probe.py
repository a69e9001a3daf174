"""One refresh of the warehouse, run the way ``liger-warehouse refresh`` runs it, timed from inside.

    LIGER_WAREHOUSE_DIR=... LIGER_WAREHOUSE_UPSTREAM=... DAGSTER_HOME=... python -m benchmarks.probe

``DAGSTER_HOME`` must hold a ``dagster.yaml`` (``scenarios.refresh`` writes one, telemetry off).

Prints one JSON line: Dagster's start-up (from process creation until the job is resolved and
the instance is open: imports, definitions, instance), the job's wall time, each step's start
and end (epoch seconds, so the caller can place memory samples), the ``upstream_snapshots``
metadata (requests, content bytes) and whether the run succeeded and published.
"""

from __future__ import annotations

import json
import time

import psutil

# As the CLI runs the job: Dagster's console log off.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
COUNTERS = ("http_requests", "content_bytes_downloaded", "revisions_downloaded", "revisions_listed")


def _steps(instance, run_id: str) -> list[dict]:
    """Start and end of each step, from the run's event log (the events carry the times)."""
    starts, steps = {}, []
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        kind, key = event.event_type_value, event.step_key
        if kind == "STEP_START":
            starts[key] = entry.timestamp
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED") and key in starts:
            steps.append({"step": key, "start": starts[key], "end": entry.timestamp, "status": kind})
    return steps


def _upstream_counters(result) -> dict:
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION" and event.asset_key.path == ["upstream_snapshots"]:
            meta = event.event_specific_data.materialization.metadata
            return {k: meta[k].value for k in COUNTERS if k in meta}
    return {}


def _published(result) -> bool:
    """Whether the run committed a snapshot: the publishing step materializes the tables then only."""
    return any(
        e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key.path == ["fact_result"] for e in result.all_events
    )


def _failures(result) -> list[str]:
    """``step: message`` of each failed step's innermost error, so that a failed run says why."""
    from liger_warehouse.cli.warehouse import root_cause

    failed = (e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return [f"{e.step_key}: {root_cause(e.event_specific_data.error)[1]}" for e in failed]


def main() -> None:
    created = psutil.Process().create_time()
    import dagster as dg

    from pipelines.definitions import load

    # The instance of $DAGSTER_HOME, which the caller sets, as the CLI opens it.
    with dg.DagsterInstance.get() as instance:
        job = load().resolve_job_def("refresh")
        ready = time.time()
        result = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET_LOGS)
        done = time.time()
        steps = _steps(instance, result.run_id)
    out = {
        "ok": result.success,
        "error": "; ".join(_failures(result)),
        "startup": ready - created,
        "job": done - ready,
        "job_start": ready,
        "steps": steps,
        "upstream": _upstream_counters(result),
        "published": _published(result),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
