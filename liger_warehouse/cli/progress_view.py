"""Progress bars for ``liger-warehouse refresh``: one for the job's stages, fed by the Dagster
events of the run, and one each for downloads, normalization and the publishing transaction's
phases, fed by ``liger_warehouse.runtime.progress``;
its notices (retries) as lines above the bars; the run's warnings kept for the summary."""

from __future__ import annotations

import logging
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

TASK_LABELS = {"download": "downloading revisions", "normalize": "normalizing revisions", "publish": "publishing"}
# Dagster step events that end a stage, whatever its outcome.
STAGE_ENDS = {"STEP_SUCCESS", "STEP_SKIPPED", "STEP_FAILURE"}


class RefreshProgress:
    """Rich progress for one refresh run; a context manager around the run."""

    def __init__(self, console: Console, stages: int) -> None:
        self.progress = Progress(
            TextColumn("{task.description:<40}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.stages = self.progress.add_task("stages", total=stages)
        self.tasks: dict[str, TaskID] = {}
        # What the run's steps warned about, each message once (two steps may report one).
        self.seen: dict[str, None] = {}

    def __enter__(self) -> RefreshProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.stop()

    def on_event(self, record) -> None:
        """A Dagster event log record of the run (see ``DagsterInstance.add_event_listener``)."""
        event = record.dagster_event
        if event is None:
            if record.level >= logging.WARNING:
                self.seen[record.user_message] = None
            return
        if not event.step_key:
            return
        if event.event_type_value == "STEP_START":
            self.progress.update(self.stages, description=f"stage: {event.step_key}")
        elif event.event_type_value in STAGE_ENDS:
            self.progress.advance(self.stages)

    def on_progress(self, task: str, completed: int, total: int, label: str) -> None:
        """A report from ``liger_warehouse.runtime.progress``: a bar per task, added when it first has work."""
        if task not in self.tasks:
            if total == 0:
                return
            self.tasks[task] = self.progress.add_task(TASK_LABELS.get(task, task), total=total)
        self.progress.update(self.tasks[task], completed=completed, total=total)

    def on_notice(self, message: str) -> None:
        """A notice from ``liger_warehouse.runtime.progress`` (a retry): a line above the bars."""
        self.progress.console.print(f"[yellow]{escape(message)}[/yellow]", soft_wrap=True)

    @property
    def warnings(self) -> list[str]:
        return list(self.seen)

    def finish(self, success: bool) -> None:
        label = "stages: done" if success else "stages: failed"
        self.progress.update(self.stages, description=label)
