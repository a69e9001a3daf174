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

Fault injection (``FakeGitHub.inject``) takes a fault built by the factory functions in
this module: :func:`status`, :func:`rate_limited`, :func:`retry_after`, :func:`reset`,
:func:`stall`, :func:`truncate`, :func:`wrong_length`, :func:`html`,
:func:`redirect_loop` and :func:`huge`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import hashlib
import json
import math
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

API_PREFIX = "/api/v3"
RAW_PREFIX = "/raw"
DEFAULT_PER_PAGE = 30
GITHUB_PER_PAGE_MAX = 100
# A stalled handler must never keep a test (or stop()) waiting longer than this.
MAX_STALL_SECONDS = 30.0
# Marks the second and later hops of a redirect loop, so that following the loop does not
# consume the `times` budget of the rule that started it.
LOOP_PARAM = "__fake_redirect_loop"

_JSON = "application/json; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
_RAW_NOT_FOUND = b"404: Not Found"
_API_DOCS = "https://docs.github.com/rest"
_CSV_HEADER = (
    b"kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,"
    b"x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,"
    b"timestamp,liger_version\n"
)
_CSV_FILLER_ROW = (
    b'huge,liger,full,speed,ms,V,vocab size,4096,1.0,0.9,1.1,"{""B"": 8}",'
    b"NVIDIA A100-SXM4-80GB,2024-09-03 15:32:05,0.0.0\n"
)
_HUGE_CHUNK = 64 * 1024
_STEM_RE = re.compile(r"benchmark/data/([A-Za-z0-9_][A-Za-z0-9_.-]*)\.csv")
_COMMITS_RE = re.compile(r"/repos/([^/]+)/([^/]+)/commits/?")

FaultKind = Literal[
    "status",
    "reset",
    "stall",
    "truncate",
    "wrong_length",
    "html",
    "redirect_loop",
    "huge",
]
Host = Literal["api", "raw", "other"]


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """One misbehaviour of the server. Build it with the factory functions below."""

    kind: FaultKind
    code: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    seconds: float = 0.0
    after_headers: bool = False
    n_bytes: int = 0
    delta: int = 0
    chunked: bool = False


def status(code: int, headers: Mapping[str, str] | None = None, body: bytes = b"") -> Fault:
    """Answer with `code`, the given headers and body instead of the real response."""
    return Fault("status", code=code, headers=tuple((headers or {}).items()), body=body)


def rate_limited(reset_at: int | None = None, code: int = 403) -> Fault:
    """GitHub's primary rate limit: 403, ``X-RateLimit-Remaining: 0`` and the reset epoch.

    `reset_at` defaults to one second from the moment the fault is served, so a client
    that honours it waits only briefly.
    """
    reset_epoch = reset_at if reset_at is not None else -1  # resolved when served
    body = json.dumps(
        {
            "message": "API rate limit exceeded for 127.0.0.1.",
            "documentation_url": _API_DOCS,
        }
    ).encode()
    return Fault(
        "status",
        code=code,
        headers=(
            ("Content-Type", _JSON),
            ("X-RateLimit-Limit", "60"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Used", "60"),
            ("X-RateLimit-Reset", str(reset_epoch)),
            ("X-RateLimit-Resource", "core"),
        ),
        body=body,
    )


def retry_after(seconds: int, code: int = 429) -> Fault:
    """A secondary rate limit / overload answer carrying ``Retry-After: <seconds>``."""
    body = json.dumps({"message": "You have exceeded a secondary rate limit.", "documentation_url": _API_DOCS}).encode()
    return Fault(
        "status",
        code=code,
        headers=(("Content-Type", _JSON), ("Retry-After", str(seconds))),
        body=body,
    )


def reset() -> Fault:
    """Close the connection with a TCP RST (SO_LINGER 0) without sending any response."""
    return Fault("reset")


def stall(seconds: float, *, after_headers: bool = False) -> Fault:
    """Wait `seconds` (capped at ``MAX_STALL_SECONDS``) before responding.

    With ``after_headers=True`` the status line and headers go out first and the wait is
    between them and the body, which exercises a client's read timeout rather than its
    time-to-first-byte. The wait ends early when the server stops.
    """
    return Fault("stall", seconds=min(max(seconds, 0.0), MAX_STALL_SECONDS), after_headers=after_headers)


def truncate(n_bytes: int) -> Fault:
    """Send the real headers (correct Content-Length) but only the first `n_bytes` of the
    body, then close. At least one byte is always withheld, so the body is never complete."""
    return Fault("truncate", n_bytes=max(n_bytes, 0))


def wrong_length(delta: int) -> Fault:
    """Announce ``Content-Length: len(body) + delta``, send the whole body, then close.

    A positive `delta` makes the body look cut short (the client sees an incomplete
    message); a negative one makes a compliant client silently receive a shortened body.
    """
    if delta == 0:
        raise ValueError("wrong_length needs a non-zero delta")
    return Fault("wrong_length", delta=delta)


def html() -> Fault:
    """200 with an HTML error page (text/html) where CSV or JSON was expected."""
    return Fault("html")


def redirect_loop() -> Fault:
    """302 to the same URL forever.

    The first hop points at the requested URL with ``LOOP_PARAM`` added to its query;
    that URL then redirects to itself on every request, whatever the injected rules say.
    So the rule's `times` counts fetch attempts, not hops: with ``times=1`` the first
    attempt loops until the client gives up, and a retry of the original URL is served
    normally.
    """
    return Fault("redirect_loop")


def huge(n_bytes: int, *, chunked: bool = False) -> Fault:
    """200 with an `n_bytes` body (a CSV header followed by filler rows), streamed in
    64 KiB pieces so the fake never holds it in memory. With ``chunked=True`` it uses
    ``Transfer-Encoding: chunked`` and no Content-Length, so a client cannot reject it up
    front and must enforce its size cap while streaming."""
    return Fault("huge", n_bytes=max(n_bytes, 0), chunked=chunked)


# --------------------------------------------------------------------------- request log


@dataclass(frozen=True)
class RequestRecord:
    """One request as the fake saw and answered it."""

    method: str
    path: str  # path and query exactly as sent by the client
    status: int  # 0 while no status line has been sent: reset, or still stalled
    body_bytes: int  # response body bytes handed to the socket
    headers: dict[str, str]  # request headers, names lower-cased
    host: Host
    fault: FaultKind | None = None


@dataclass
class _Rule:
    matches: Callable[[str], bool]
    fault: Fault
    remaining: int | None


@dataclass
class _Response:
    code: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


@dataclass
class _Sent:
    """The live log entry of one request.

    It joins the log when the request arrives and is updated just *before* each write,
    so by the time a client holds a response its entry already shows it; logging after
    the write would race with a test inspecting the log right after its request returns.
    """

    method: str
    path: str
    headers: dict[str, str]
    host: Host
    fault: FaultKind | None
    code: int = 0
    body_bytes: int = 0

    def snapshot(self) -> RequestRecord:
        return RequestRecord(self.method, self.path, self.code, self.body_bytes, self.headers, self.host, self.fault)


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-exchange is routine here (timeouts, resets under test);
        # only genuine bugs in the fake are worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so that keep-alive, Content-Length and chunking behave as on GitHub.
    protocol_version = "HTTP/1.1"
    server_version = "FakeGitHub/1.0"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_GET(self) -> None:
        self.server.fake._handle(self, head=False)

    def do_HEAD(self) -> None:
        self.server.fake._handle(self, head=True)

    def log_message(self, format: str, *args: Any) -> None:
        # The request log replaces stderr chatter.
        pass


class FakeGitHub:
    """A loopback HTTP server posing as api.github.com and raw.githubusercontent.com.

    Use as a context manager (or call :meth:`start` / :meth:`stop`)::

        with FakeGitHub(mirror) as gh:
            httpx.get(f"{gh.api_base}/repos/linkedin/Liger-Kernel/commits", params=...)

    `per_page_max` is the cap applied to ``per_page`` (GitHub's is 100; lower it to get
    many pages out of a small mirror). `require_token`, when set, makes every API request
    without ``Authorization: Bearer <token>`` or ``token <token>`` fail with 401; the raw
    host never requires it, as on GitHub. `rate_limit` is the API budget reported in the
    ``X-RateLimit-*`` headers: each 200 from the API spends one (304s are free, as on
    GitHub) and once it is spent the API answers 403 until the reset time.
    """

    def __init__(
        self,
        mirror_dir: Path,
        owner: str = "linkedin",
        repo: str = "Liger-Kernel",
        per_page_max: int = GITHUB_PER_PAGE_MAX,
        *,
        require_token: str | None = None,
        rate_limit: int = 5000,
    ) -> None:
        self.mirror_dir = Path(mirror_dir)
        self._root = self.mirror_dir.resolve()
        self.owner = owner
        self.repo = repo
        self.per_page_max = per_page_max
        self.require_token = require_token
        self.rate_limit = rate_limit
        self._lock = threading.Lock()
        self._log: list[_Sent] = []
        self._rules: list[_Rule] = []
        self._replacements: dict[str, bytes | None] = {}
        self._rate_remaining = rate_limit
        self._rate_reset = int(time.time()) + 3600
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeGitHub:
        if self._server is not None:
            raise RuntimeError("FakeGitHub already started")
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        # A short poll interval keeps stop() quick; tests start and stop servers a lot.
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes stalled handlers
        server.shutdown()
        # Idle keep-alive connections would otherwise keep answering after stop().
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            # Already closed by its handler or the client: nothing left to wake.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---------------------------------------------------------------- addresses

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeGitHub is not running")
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return f"{self.origin}{API_PREFIX}"

    @property
    def raw_base(self) -> str:
        return f"{self.origin}{RAW_PREFIX}"

    def commits_url(self) -> str:
        """The list-commits endpoint; pass ``path=benchmark/data/<stem>.csv`` as a param."""
        return f"{self.api_base}/repos/{self.owner}/{self.repo}/commits"

    def raw_url(self, ref: str, file_path: str) -> str:
        """Raw content of `file_path` at `ref` (a commit sha or ``gh-pages``)."""
        return f"{self.raw_base}/{self.owner}/{self.repo}/{ref}/{file_path.lstrip('/')}"

    # ---------------------------------------------------------------- request log

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the request log, in order of arrival."""
        with self._lock:
            return [entry.snapshot() for entry in self._log]

    def content_requests(self) -> list[RequestRecord]:
        """Raw-host requests that were answered 200 with a non-empty body."""
        return [r for r in self.requests if r.host == "raw" and r.status == 200 and r.body_bytes]

    def bytes_sent(self) -> int:
        """Response body bytes written to clients since the last :meth:`clear_log`."""
        return sum(r.body_bytes for r in self.requests)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    # ---------------------------------------------------------------- faults

    def inject(self, path_pattern: str | re.Pattern[str], fault: Fault, times: int | None = 1) -> None:
        """Apply `fault` to the next `times` matching requests (None: all of them).

        The pattern is matched against the request target (path plus query) after
        percent-decoding, e.g. ``/raw/linkedin/Liger-Kernel/abc.../benchmark/data/x.csv``
        or ``/api/v3/repos/linkedin/Liger-Kernel/commits?path=benchmark/data/x.csv&...``.
        A ``str`` is a shell-style pattern matched with :func:`fnmatch.fnmatchcase` against
        the whole target (``*`` crosses ``/`` and ``?``, so ``*/all_benchmark_data.csv``
        matches every raw fetch of that file); a compiled ``re.Pattern`` is applied with
        ``.search``. Rules are tried in the order they were injected and the first one with
        budget left wins; once every rule is spent, normal serving resumes.
        """
        if times is not None and times < 1:
            raise ValueError("times must be a positive int or None")
        if isinstance(path_pattern, re.Pattern):
            regex = path_pattern

            def matches(target: str) -> bool:
                return regex.search(target) is not None
        else:
            glob = path_pattern

            def matches(target: str) -> bool:
                return fnmatch.fnmatchcase(target, glob)

        with self._lock:
            self._rules.append(_Rule(matches, fault, times))

    def clear_faults(self) -> None:
        """Drop every injected fault and content replacement."""
        with self._lock:
            self._rules.clear()
            self._replacements.clear()

    def replace(self, path: str, body: bytes | None) -> None:
        """Serve `body` (200, with its own ETag) for `path` instead of the mirror's file;
        ``None`` makes the path a 404 as if the file had vanished upstream.

        `path` is a URL path (``/raw/<owner>/<repo>/<ref>/<file>``) or a full URL from this
        server; any query is ignored when matching. To change what the list-commits
        endpoint returns, edit ``commits/<stem>.json`` in a copy of the mirror instead,
        since one endpoint path serves every stem.
        """
        key = unquote(urlsplit(path).path)
        with self._lock:
            self._replacements[key] = body

    # ---------------------------------------------------------------- internals

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def _take_fault(self, target: str) -> Fault | None:
        decoded = unquote(target)
        if any(k == LOOP_PARAM for k, _ in parse_qsl(urlsplit(target).query)):
            return redirect_loop()
        with self._lock:
            for rule in self._rules:
                if rule.remaining == 0 or not rule.matches(decoded):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.fault
        return None

    def _handle(self, h: _Handler, *, head: bool) -> None:
        target = h.path
        url_path = urlsplit(target).path
        host: Host = (
            "api"
            if url_path.startswith(API_PREFIX + "/")
            else "raw"
            if url_path.startswith(RAW_PREFIX + "/")
            else "other"
        )
        req_headers = {k.lower(): v for k, v in h.headers.items()}
        fault = self._take_fault(target)
        sent = _Sent(h.command, target, req_headers, host, fault.kind if fault else None)
        with self._lock:
            self._log.append(sent)
        try:
            self._respond(h, target, req_headers, fault, head, sent)
        except OSError:
            # The client gave up (or we cut it off); what was sent is already tallied.
            h.close_connection = True

    def _respond(
        self,
        h: _Handler,
        target: str,
        req_headers: dict[str, str],
        fault: Fault | None,
        head: bool,
        sent: _Sent,
    ) -> None:
        if fault is None:
            self._write(h, self._route(target, req_headers), head, sent)
            return
        kind = fault.kind
        if kind == "reset":
            # SO_LINGER 0 turns close() into an RST; the rfile holds a reference to the
            # socket, so it must go first or close() would leave the fd open.
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.rfile.close()
            h.connection.close()
            h.close_connection = True
        elif kind == "status":
            headers = [
                (k, str(int(time.time()) + 1) if k == "X-RateLimit-Reset" and v == "-1" else v)
                for k, v in fault.headers
            ]
            if fault.body and not any(k.lower() == "content-type" for k, _ in headers):
                headers.append(("Content-Type", _TEXT))
            self._write(h, _Response(fault.code, headers, fault.body), head, sent)
        elif kind == "html":
            page = (
                b"<!DOCTYPE html>\n<html><head><title>Unicorn! &middot; GitHub</title></head>"
                b"<body><h1>No server is currently available to service your request.</h1>"
                b"<p>Sorry about that. Please try refreshing.</p></body></html>\n"
            )
            self._write(h, _Response(200, [("Content-Type", _HTML)], page), head, sent)
        elif kind == "redirect_loop":
            parts = urlsplit(target)
            query = parse_qsl(parts.query, keep_blank_values=True)
            if not any(k == LOOP_PARAM for k, _ in query):
                query.append((LOOP_PARAM, "1"))
            location = f"{self.origin}{parts.path}?{urlencode(query)}"
            self._write(h, _Response(302, [("Location", location)]), head, sent)
        elif kind == "huge":
            self._write_huge(h, fault, head, sent)
        elif kind == "stall":
            if not fault.after_headers:
                self._stopping.wait(fault.seconds)
                self._write(h, self._route(target, req_headers), head, sent)
            else:
                resp = self._route(target, req_headers)
                self._write_head(h, resp, len(resp.body), sent)
                self._stopping.wait(fault.seconds)
                if not head:
                    self._write_body(h, resp.body, sent)
        elif kind == "truncate":
            resp = self._route(target, req_headers)
            # Announcing the close keeps a pooling client from reusing this connection
            # before our FIN reaches it, which would fail its *next* request at random.
            resp.headers.append(("Connection", "close"))
            keep = min(fault.n_bytes, max(len(resp.body) - 1, 0))
            self._write_head(h, resp, len(resp.body), sent)
            if not head:
                self._write_body(h, resp.body[:keep], sent)
            h.close_connection = True
        elif kind == "wrong_length":
            resp = self._route(target, req_headers)
            resp.headers.append(("Connection", "close"))  # as for truncate
            self._write_head(h, resp, max(len(resp.body) + fault.delta, 0), sent)
            if not head:
                self._write_body(h, resp.body, sent)
            h.close_connection = True

    def _write_head(self, h: _Handler, resp: _Response, length: int | None, sent: _Sent) -> None:
        h.send_response(resp.code)
        for name, value in resp.headers:
            h.send_header(name, value)
        # 304 carries no body and so no length; everything else is length-delimited.
        if length is not None and resp.code != 304:
            h.send_header("Content-Length", str(length))
        sent.code = resp.code
        h.end_headers()

    def _write_body(self, h: _Handler, data: bytes, sent: _Sent) -> None:
        sent.body_bytes += len(data)
        h.wfile.write(data)

    def _write(self, h: _Handler, resp: _Response, head: bool, sent: _Sent) -> None:
        self._write_head(h, resp, len(resp.body), sent)
        if not head and resp.code != 304:
            self._write_body(h, resp.body, sent)

    def _write_huge(self, h: _Handler, fault: Fault, head: bool, sent: _Sent) -> None:
        headers = [("Content-Type", _TEXT)]
        if fault.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        self._write_head(h, _Response(200, headers), None if fault.chunked else fault.n_bytes, sent)
        if head:
            return
        for piece in _huge_body(fault.n_bytes):
            if self._stopping.is_set():
                h.close_connection = True
                return
            if fault.chunked:
                h.wfile.write(b"%x\r\n" % len(piece))
                self._write_body(h, piece, sent)
                h.wfile.write(b"\r\n")
            else:
                self._write_body(h, piece, sent)
        if fault.chunked:
            h.wfile.write(b"0\r\n\r\n")

    # ------------------------------------------------------------ normal serving

    def _route(self, target: str, req_headers: dict[str, str]) -> _Response:
        parts = urlsplit(target)
        if parts.path.startswith(API_PREFIX + "/"):
            return self._api(parts.path, parts.query, req_headers)
        if parts.path.startswith(RAW_PREFIX + "/"):
            return self._raw(parts.path, req_headers)
        return _Response(404, [("Content-Type", _TEXT)], _RAW_NOT_FOUND)

    def _is_us(self, owner: str, repo: str) -> bool:
        return owner.lower() == self.owner.lower() and repo.lower() == self.repo.lower()

    def _replacement(self, url_path: str) -> tuple[bool, bytes | None]:
        key = unquote(url_path)
        with self._lock:
            if key in self._replacements:
                return True, self._replacements[key]
        return False, None

    def _api(self, url_path: str, query: str, req_headers: dict[str, str]) -> _Response:
        def json_response(code: int, payload: object, *, spend: bool = False) -> _Response:
            body = json.dumps(payload, ensure_ascii=False).encode()
            return self._api_response(code, body, req_headers, spend=spend)

        if self.require_token is not None:
            given = _bearer(req_headers.get("authorization", ""))
            if given is None:
                return json_response(401, {"message": "Requires authentication", "documentation_url": _API_DOCS})
            if given != self.require_token:
                return json_response(401, {"message": "Bad credentials", "documentation_url": _API_DOCS})
        not_found = {"message": "Not Found", "documentation_url": _API_DOCS, "status": "404"}
        replaced, body = self._replacement(url_path)
        if replaced:
            if body is None:
                return json_response(404, not_found)
            return self._api_response(200, body, req_headers, spend=True)
        m = _COMMITS_RE.fullmatch(url_path[len(API_PREFIX) :])
        if m is None or not self._is_us(m.group(1), m.group(2)):
            return json_response(404, not_found)
        with self._lock:
            if time.time() >= self._rate_reset:
                # A new rate-limit window, as GitHub opens one every hour.
                self._rate_remaining = self.rate_limit
                self._rate_reset = int(time.time()) + 3600
            exhausted = self._rate_remaining <= 0
        if exhausted:
            return json_response(
                403,
                {
                    "message": "API rate limit exceeded for 127.0.0.1.",
                    "documentation_url": _API_DOCS,
                },
            )

        params = parse_qsl(query, keep_blank_values=True)
        args = dict(params)
        try:
            since = _parse_time(args.get("since"))
            until = _parse_time(args.get("until"))
        except ValueError as exc:
            return json_response(422, {"message": str(exc), "documentation_url": _API_DOCS})
        commits = self._commits_for(args.get("path", ""))
        if since is not None or until is not None:
            commits = [c for c in commits if _within(c, since, until)]

        per_page = _positive_int(args.get("per_page"), DEFAULT_PER_PAGE)
        per_page = min(per_page, self.per_page_max)
        page = _positive_int(args.get("page"), 1)
        last = max(1, math.ceil(len(commits) / per_page))
        items = commits[(page - 1) * per_page : page * per_page]

        # GitHub's rel order and presence: first page -> next,last; middle ->
        # prev,next,last,first; last page -> prev,first; a single page -> no Link at all.
        rels: list[tuple[str, int]] = []
        if 1 < page <= last + 1:
            rels.append(("prev", page - 1))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        resp = json_response(200, items, spend=True)
        if rels:
            base = f"{self.origin}{url_path}"
            link = ", ".join(f'<{base}?{_with_page(params, n)}>; rel="{rel}"' for rel, n in rels)
            resp.headers.append(("Link", link))
        return resp

    def _api_response(self, code: int, body: bytes, req_headers: dict[str, str], *, spend: bool) -> _Response:
        etag = _etag(body)
        not_modified = code == 200 and _matches_etag(req_headers.get("if-none-match"), etag)
        with self._lock:
            # Conditional hits are free on GitHub, which is why clients send If-None-Match.
            if spend and code == 200 and not not_modified:
                self._rate_remaining = max(self._rate_remaining - 1, 0)
            remaining = self._rate_remaining
        headers = [
            ("Content-Type", _JSON),
            ("Cache-Control", "private, max-age=60, s-maxage=60"),
            ("Vary", "Accept, Authorization, Cookie"),
            ("X-GitHub-Media-Type", "github.v3; format=json"),
            ("X-RateLimit-Limit", str(self.rate_limit)),
            ("X-RateLimit-Remaining", str(remaining)),
            ("X-RateLimit-Reset", str(self._rate_reset)),
            ("X-RateLimit-Used", str(self.rate_limit - remaining)),
            ("X-RateLimit-Resource", "core"),
        ]
        if code == 200:
            headers.append(("ETag", etag))
        if not_modified:
            return _Response(304, headers)
        return _Response(code, headers, body)

    def _commits_for(self, file_path: str) -> list[dict[str, Any]]:
        m = _STEM_RE.fullmatch(file_path)
        if m is None or ".." in m.group(1):
            return []
        path = self._inside(self.mirror_dir / "commits" / f"{m.group(1)}.json")
        if path is None:
            return []
        data = json.loads(path.read_bytes())
        return data if isinstance(data, list) else []

    def _raw(self, url_path: str, req_headers: dict[str, str]) -> _Response:
        not_found = _Response(404, [("Content-Type", _TEXT)], _RAW_NOT_FOUND)
        replaced, body = self._replacement(url_path)
        if replaced:
            return not_found if body is None else self._raw_ok(body, req_headers)
        parts = unquote(url_path[len(RAW_PREFIX) :]).split("/")[1:]
        # Decoding first means %2e%2e and %2f cannot smuggle a traversal past this check.
        if len(parts) < 4 or any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
            return not_found
        owner, repo, ref, *rest = parts
        # Upstream has no .gz files; those names exist only in the mirror.
        if not self._is_us(owner, repo) or rest[-1].endswith(".gz"):
            return not_found
        base = self.mirror_dir / "gh-pages" if ref == "gh-pages" else self.mirror_dir / "raw" / ref
        wanted = base.joinpath(*rest)
        # A plain file wins over its .gz so a test can drop an uncompressed override in.
        plain = self._inside(wanted)
        if plain is not None:
            return self._raw_ok(plain.read_bytes(), req_headers)
        packed = self._inside(wanted.with_name(wanted.name + ".gz"))
        if packed is not None:
            return self._raw_ok(gzip.decompress(packed.read_bytes()), req_headers)
        return not_found

    def _raw_ok(self, body: bytes, req_headers: dict[str, str]) -> _Response:
        etag = _etag(body)
        headers = [
            ("Content-Type", _TEXT),
            ("Cache-Control", "max-age=300"),
            ("ETag", etag),
            ("X-Content-Type-Options", "nosniff"),
        ]
        if _matches_etag(req_headers.get("if-none-match"), etag):
            return _Response(304, headers)
        return _Response(200, headers, body)

    def _inside(self, path: Path) -> Path | None:
        """`path` if it is a regular file that resolves inside the mirror, else None."""
        try:
            resolved = path.resolve()
        except OSError:
            return None
        if not resolved.is_relative_to(self._root) or not resolved.is_file():
            return None
        return resolved


# --------------------------------------------------------------------------- helpers


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha1(body, usedforsecurity=False).hexdigest() + '"'


def _matches_etag(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison, which is what If-None-Match uses."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    ours = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == ours for tag in if_none_match.split(","))


def _bearer(authorization: str) -> str | None:
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    return None


def _positive_int(value: str | None, default: int) -> int:
    # GitHub ignores nonsense paging values rather than rejecting the request.
    try:
        number = int(value) if value is not None else default
    except ValueError:
        return default
    return number if number >= 1 else default


def _with_page(params: list[tuple[str, str]], page: int) -> str:
    """The query with `page` set, other params kept in their order (as GitHub does)."""
    out: list[tuple[str, str]] = []
    placed = False
    for key, value in params:
        if key == "page":
            if not placed:
                out.append(("page", str(page)))
                placed = True
        else:
            out.append((key, value))
    if not placed:
        out.append(("page", str(page)))
    return urlencode(out)


def _parse_time(value: str | None) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        return _aware(datetime.fromisoformat(value))
    except ValueError:
        raise ValueError(f"Invalid time value: {value!r}") from None


def _aware(when: datetime) -> datetime:
    # GitHub reads zone-less timestamps as UTC; comparing naive and aware would raise.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _within(commit: dict[str, Any], since: datetime | None, until: datetime | None) -> bool:
    # GitHub filters `since`/`until` on the committer date.
    raw = (commit.get("commit") or {}).get("committer", {}).get("date")
    if not raw:
        return True
    when = _aware(datetime.fromisoformat(raw))
    return (since is None or when >= since) and (until is None or when <= until)


def _huge_body(n_bytes: int) -> Iterator[bytes]:
    block = _CSV_FILLER_ROW * (_HUGE_CHUNK // len(_CSV_FILLER_ROW) + 1)
    first = (_CSV_HEADER + block)[:_HUGE_CHUNK]
    remaining = n_bytes
    piece = first
    while remaining > 0:
        out = piece[:remaining]
        yield out
        remaining -= len(out)
        piece = block[:_HUGE_CHUNK]
