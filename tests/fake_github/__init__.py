"""A fake GitHub for tests: the REST API and the raw-content host, on loopback.

It serves a mirror directory laid out as described in ``shared/README.md``::

    commits/<stem>.json                          -> list-commits responses
    raw/<sha>/benchmark/data/<stem>.csv.gz       -> raw file content at a commit
    gh-pages/benchmarks/...                      -> the gh-pages branch

URL shapes (``<port>`` is chosen by the OS, ``owner``/``repo`` default to
``linkedin``/``Liger-Kernel`` and are matched case-insensitively, as GitHub does)::

    GET http://127.0.0.1:<port>/api/v3/repos/<owner>/<repo>/commits
            ?path=benchmark/data/<stem>.csv&per_page=N&page=K[&since=ISO][&until=ISO]
    GET http://127.0.0.1:<port>/raw/<owner>/<repo>/<sha>/benchmark/data/<stem>.csv
    GET http://127.0.0.1:<port>/raw/<owner>/<repo>/gh-pages/benchmarks/commits.txt
    GET http://127.0.0.1:<port>/raw/<owner>/<repo>/gh-pages/benchmarks/golden_commits.json
    GET http://127.0.0.1:<port>/raw/<owner>/<repo>/gh-pages/benchmarks/<run>/benchmark.csv

HEAD is answered too. Everything else is a 404 (JSON on the API, ``404: Not Found`` on
the raw host). Files are read from disk on every request, so a test may edit its copy of
the mirror while the server runs.

Fault injection (``FakeGitHub.inject``) takes a fault built by the factory functions of
``faults.py``: :func:`status`, :func:`rate_limited`, :func:`retry_after`, :func:`reset`,
:func:`stall`, :func:`truncate`, :func:`wrong_length`, :func:`html`,
:func:`redirect_loop` and :func:`huge`.

``server.py`` is the HTTP server, ``routes.py`` GitHub's semantics, ``faults.py`` the faults.
"""

from tests.fake_github.faults import (
    LOOP_PARAM,
    Fault,
    html,
    huge,
    rate_limited,
    redirect_loop,
    reset,
    retry_after,
    stall,
    status,
    truncate,
    wrong_length,
)
from tests.fake_github.server import FakeGitHub, RequestRecord

__all__ = [
    "LOOP_PARAM",
    "FakeGitHub",
    "Fault",
    "RequestRecord",
    "html",
    "huge",
    "rate_limited",
    "redirect_loop",
    "reset",
    "retry_after",
    "stall",
    "status",
    "truncate",
    "wrong_length",
]
