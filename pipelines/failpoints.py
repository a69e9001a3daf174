"""Named failpoints, so tests can kill a refresh at an exact stage.

``LIGER_WAREHOUSE_FAILPOINT=<name>[:<n>]`` makes the process SIGKILL itself the n-th time (default
the first) it reaches ``failpoint(name)``. Unset, a failpoint costs one dictionary lookup. This is
the failpoint pattern of storage engines: the crash tests exercise the real code path, not a
mock, and the variable is never set in production.
"""

from __future__ import annotations

import os
import signal

ENV = "LIGER_WAREHOUSE_FAILPOINT"
_hits: dict[str, int] = {}


def failpoint(name: str) -> None:
    spec = os.environ.get(ENV)
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
