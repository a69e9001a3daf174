"""The fault language of the fake GitHub: what ``FakeGitHub.inject`` can make a response do.

Build a fault with the factory functions: :func:`status`, :func:`rate_limited`,
:func:`retry_after`, :func:`reset`, :func:`stall`, :func:`truncate`, :func:`wrong_length`,
:func:`html`, :func:`redirect_loop` and :func:`huge`. The server (``server.py``) carries them out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from tests.fake_github.routes import API_DOCS, JSON

# A stalled handler must never keep a test (or stop()) waiting longer than this.
MAX_STALL_SECONDS = 30.0
# Marks the second and later hops of a redirect loop, so that following the loop does not
# consume the `times` budget of the rule that started it.
LOOP_PARAM = "__fake_redirect_loop"
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
            "documentation_url": API_DOCS,
        }
    ).encode()
    return Fault(
        "status",
        code=code,
        headers=(
            ("Content-Type", JSON),
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
    body = json.dumps({"message": "You have exceeded a secondary rate limit.", "documentation_url": API_DOCS}).encode()
    return Fault(
        "status",
        code=code,
        headers=(("Content-Type", JSON), ("Retry-After", str(seconds))),
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


def huge_body(n_bytes: int) -> Iterator[bytes]:
    block = _CSV_FILLER_ROW * (_HUGE_CHUNK // len(_CSV_FILLER_ROW) + 1)
    first = (_CSV_HEADER + block)[:_HUGE_CHUNK]
    remaining = n_bytes
    piece = first
    while remaining > 0:
        out = piece[:remaining]
        yield out
        remaining -= len(out)
        piece = block[:_HUGE_CHUNK]
