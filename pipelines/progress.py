"""Progress of long loops (downloads, normalization) for whoever is watching, e.g. the CLI.

The refresh job runs in-process under ``liger-warehouse refresh``, so a listener registered
here sees the loops of that run as they go. Nobody listens in a Dagster run: reporting is then
a no-op. Listeners must be quick and must not raise; they run inside the loop they watch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

# (task, completed, total, label): ``completed`` of ``total`` items done, the last one ``label``.
Listener = Callable[[str, int, int, str], None]

_listeners: list[Listener] = []


def report(task: str, completed: int, total: int, label: str = "") -> None:
    """Tell every listener that ``completed`` of ``total`` items of ``task`` are done."""
    for listener in list(_listeners):
        listener(task, completed, total, label)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send progress reports to ``listener`` while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
