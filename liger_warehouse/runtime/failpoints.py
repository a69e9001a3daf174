"""Named failpoints, so tests can kill a refresh at an exact stage.

``LIGER_WAREHOUSE_FAILPOINT=<name>[:<n>]`` makes the process SIGKILL itself the n-th time (default
the first) it reaches ``failpoint(name)``. ``LIGER_WAREHOUSE_PAUSE=<name>=<file>`` makes it
stop there instead: it creates ``<file>.reached`` and waits until ``<file>`` exists, so a test
can let another process act at that exact point (two hosts racing to publish). Unset, a
failpoint costs two dictionary lookups. This is the failpoint pattern of storage engines: the
crash tests exercise the real code path, not a mock, and the variables are never set in
production.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from liger_warehouse import settings

_hits: dict[str, int] = {}


def failpoint(name: str) -> None:
    spec, pause = settings.fault_injection()
    if pause:
        _pause(name, pause)
    if not spec:
        return
    # Names may hold ":" themselves ("storage-replace:raw"), so only a numeric suffix is a count.
    target, _, nth = spec.rpartition(":")
    if not nth.isdigit():
        target, nth = spec, ""
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)


def _pause(name: str, spec: str) -> None:
    # Names may hold ":" but never "=".
    target, _, release = spec.partition("=")
    if target != name:
        return
    Path(f"{release}.reached").touch()
    while not os.path.exists(release):
        time.sleep(0.05)
