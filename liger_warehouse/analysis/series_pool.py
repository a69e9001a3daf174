"""Series analysed on every core: batches of series from the point stream go to worker
processes, and their rows come back in the order the batches went out.

The series are independent, so a batch can go to any worker. The workers are forked from
multiprocessing's fork server, which imports Otava and SciPy once (``set_forkserver_preload``);
the process that streams the points never imports them. A fork server, not a plain fork: the
streaming process runs DuckDB's threads (and Dagster's), and forking a threaded process is
unsafe. A pool can be started ahead of the work (``SeriesPool.start``: a refresh starts it with
the run), so the workers load while the steps before the change points run. At most
``2 * workers`` batches are in flight, so memory holds a few batches of points and the output
rows, never the history. Without a pool the batches are analysed in the streaming process.
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only named here: the Dagster definitions import this module, light as it is
    from liger_warehouse.analysis.series_batch import Analyzed, Batch

# Imported once by the fork server, before it forks any worker.
_PRELOAD = ["liger_warehouse.analysis.series_rows"]


def _main_script_imports() -> list[str]:
    """The modules the program's main script imports at its top level (none when it runs with
    ``-m`` or ``-c``). A worker re-runs that script (multiprocessing's rule for a child that is
    not a plain fork); with its imports loaded in the fork server, the re-run costs nothing.
    Preloading "__main__" would be the way, but Python 3.11's fork server never gets the
    script's path (it asks spawn for "main_path", which spawn calls "init_main_from_path")."""
    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None)
    if getattr(main, "__spec__", None) is not None or not path:
        return []
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def _exit_with_parent() -> None:
    """A worker's initializer: it ends when the process that started it does. Without this a
    worker whose refresh was killed would wait for batches forever, holding the refresh's
    stdout and stderr open (its parent's end of the pipe that sent its start-up data closes
    when the parent dies: multiprocessing's parent sentinel)."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_when_closed, args=(parent.sentinel,), daemon=True).start()


def _exit_when_closed(sentinel: int) -> None:
    wait([sentinel])
    os._exit(1)


def _load() -> None:
    """A worker's first task: what it needs, loaded before any batch comes."""
    import liger_warehouse.analysis.series_rows  # noqa: F401


def _analyze(batch: Batch, revisions: list[str]) -> Analyzed:
    # Imported here, in the worker (already loaded there): importing it at the top would load
    # Otava and SciPy into the streaming process too.
    from liger_warehouse.analysis.series_rows import analyze_batch

    return analyze_batch(batch, revisions)


class SeriesPool:
    """``workers`` processes that analyse batches of series."""

    def __init__(self, workers: int) -> None:
        context = multiprocessing.get_context("forkserver")
        # Only heeded by a fork server not started yet (there is one per process).
        context.set_forkserver_preload([*_main_script_imports(), *_PRELOAD])
        self.workers = workers
        self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_exit_with_parent)
        self._starting: threading.Thread | None = None
        self._start_failure: OSError | None = None

    def start(self) -> None:
        """Start every worker in the background: the fork server's imports and the workers'
        start then run beside whatever the calling process does next. (Submitting is not
        enough: the first submit waits until the fork server has loaded its imports.)"""
        self._starting = threading.Thread(target=self._start_workers, name="series-pool-start", daemon=True)
        self._starting.start()

    def _start_workers(self) -> None:
        try:
            for _ in range(self.workers):
                self._pool.submit(_load)
        except OSError as exc:  # e.g. a TMPDIR too long for the fork server's socket path
            self._start_failure = exc

    def start_failure(self) -> OSError | None:
        """Why no worker could start, once the start has finished; None when they started."""
        if self._starting is not None:
            self._starting.join()
        return self._start_failure

    def close(self) -> None:
        if self._starting is not None:
            self._starting.join()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def analyzed(self, work: Iterable[Batch], revisions: list[str]) -> Iterator[Analyzed]:
        """Each batch of ``work`` analysed, in order; ``revisions`` maps a run id to its digest."""
        pending: deque[Future[Analyzed]] = deque()
        try:
            for batch in work:
                pending.append(self._pool.submit(_analyze, batch, revisions))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


@contextmanager
def series_pool(workers: int) -> Iterator[SeriesPool | None]:
    """A pool of ``workers`` processes for the duration of the block; None for one worker."""
    if workers <= 1:
        yield None
        return
    pool = SeriesPool(workers)
    try:
        yield pool
    finally:
        pool.close()


def analyzed(work: Iterable[Batch], revisions: list[str], pool: SeriesPool | None) -> Iterator[Analyzed]:
    """Each batch of ``work`` analysed, in order: on ``pool``'s workers, else here."""
    if pool is not None:
        yield from pool.analyzed(work, revisions)
        return
    from liger_warehouse.analysis.series_rows import analyze_batch

    yield from (analyze_batch(batch, revisions) for batch in work)
