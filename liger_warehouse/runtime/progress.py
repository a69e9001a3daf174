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
# A one-line message about a wait the watcher would otherwise not see, such as a retry.
NoticeListener = Callable[[str], None]

_listeners: list[Listener] = []
_notice_listeners: list[NoticeListener] = []


def report(task: str, completed: int, total: int, label: str = "") -> None:
    """Tell every listener that ``completed`` of ``total`` items of ``task`` are done."""
    for listener in list(_listeners):
        listener(task, completed, total, label)


def notice(message: str) -> None:
    """Tell every notice listener ``message``."""
    for listener in list(_notice_listeners):
        listener(message)


@contextmanager
def listening(listener: Listener | None = None, notices: NoticeListener | None = None) -> Iterator[None]:
    """Send progress reports to ``listener``, and notices to ``notices``, while the block runs."""
    added = [(_listeners, listener), (_notice_listeners, notices)]
    for listeners, one in added:
        if one:
            listeners.append(one)
    try:
        yield
    finally:
        for listeners, one in added:
            if one:
                listeners.remove(one)
