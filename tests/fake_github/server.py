"""The fake GitHub's loopback HTTP server: lifecycle, addresses, the request log, fault rules
and the writing of responses (``routes.py`` decides what a normal response is, ``faults.py``
what an injected fault does)."""

from __future__ import annotations

import contextlib
import fnmatch
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from tests.fake_github.faults import LOOP_PARAM, Fault, FaultKind, huge_body, redirect_loop
from tests.fake_github.routes import API_PREFIX, GITHUB_PER_PAGE_MAX, HTML, RAW_PREFIX, TEXT, GitHubRoutes, Response

Host = Literal["api", "raw", "other"]


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


class FakeGitHub(GitHubRoutes):
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
                headers.append(("Content-Type", TEXT))
            self._write(h, Response(fault.code, headers, fault.body), head, sent)
        elif kind == "html":
            page = (
                b"<!DOCTYPE html>\n<html><head><title>Unicorn! &middot; GitHub</title></head>"
                b"<body><h1>No server is currently available to service your request.</h1>"
                b"<p>Sorry about that. Please try refreshing.</p></body></html>\n"
            )
            self._write(h, Response(200, [("Content-Type", HTML)], page), head, sent)
        elif kind == "redirect_loop":
            parts = urlsplit(target)
            query = parse_qsl(parts.query, keep_blank_values=True)
            if not any(k == LOOP_PARAM for k, _ in query):
                query.append((LOOP_PARAM, "1"))
            location = f"{self.origin}{parts.path}?{urlencode(query)}"
            self._write(h, Response(302, [("Location", location)]), head, sent)
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

    def _write_head(self, h: _Handler, resp: Response, length: int | None, sent: _Sent) -> None:
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

    def _write(self, h: _Handler, resp: Response, head: bool, sent: _Sent) -> None:
        self._write_head(h, resp, len(resp.body), sent)
        if not head and resp.code != 304:
            self._write_body(h, resp.body, sent)

    def _write_huge(self, h: _Handler, fault: Fault, head: bool, sent: _Sent) -> None:
        headers = [("Content-Type", TEXT)]
        if fault.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        self._write_head(h, Response(200, headers), None if fault.chunked else fault.n_bytes, sent)
        if head:
            return
        for piece in huge_body(fault.n_bytes):
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
