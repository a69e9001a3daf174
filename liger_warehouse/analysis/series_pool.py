"""Series analysed on every core: batches of series from the point stream go to a pool of
worker processes, and their rows come back in the order the batches went out.

The series are independent, so a batch can go to any worker. Workers are forked from
multiprocessing's fork server, which imports Otava and SciPy once (``set_forkserver_preload``)
while the streaming process reads DuckDB; the streaming process never imports them, so the
import costs a core beside the stream instead of time before it. A fork server, not a plain
fork: the streaming process runs DuckDB's threads (and Dagster's), and forking a threaded
process is unsafe. At most ``2 * workers`` batches are in flight, so memory holds a few
batches of points and the output rows, never the history. With one worker the batches are
analysed in the streaming process, without a pool.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import forkserver

from liger_warehouse.analysis.series_batch import Analyzed, Batch

# The worker module, imported once by the fork server; "__main__" is the program's main module,
# which a worker would import anyway (multiprocessing's rule for a non-forked child).
_PRELOAD = ["__main__", "liger_warehouse.analysis.series_rows"]


def _fork_server() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    # Only heeded by a fork server not started yet (there is one per process).
    context.set_forkserver_preload(_PRELOAD)
    return context


def start_fork_server() -> None:
    """Start the fork server the workers come from, if it is not running: called when a run
    starts, its imports then take a core during the steps before the change points instead of
    delaying them."""
    _fork_server()
    forkserver.ensure_running()


# A worker's revision digests, set once per worker process by the pool's initializer.
_revisions: list[str] = []


def _start_worker(revisions: list[str]) -> None:
    _revisions[:] = revisions


def _analyze(batch: Batch) -> Analyzed:
    # Imported here, in the worker (the fork server has it loaded already): importing it at the
    # top would load Otava and SciPy into the streaming process too.
    from liger_warehouse.analysis.series_rows import analyze_batch

    return analyze_batch(batch, _revisions)


def analyzed(work: Iterable[Batch], revisions: list[str], workers: int) -> Iterator[Analyzed]:
    """Each batch of ``work`` analysed, in order, on ``workers`` processes."""
    if workers <= 1:
        from liger_warehouse.analysis.series_rows import analyze_batch

        yield from (analyze_batch(batch, revisions) for batch in work)
        return
    pool = ProcessPoolExecutor(workers, mp_context=_fork_server(), initializer=_start_worker, initargs=(revisions,))
    pending: deque[Future[Analyzed]] = deque()
    try:
        for batch in work:
            pending.append(pool.submit(_analyze, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
