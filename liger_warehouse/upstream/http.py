"""HTTP downloads with timeouts, bounded retries, rate-limit handling, size caps and ETags.

Transient failures (5xx, resets, timeouts, truncated bodies, rate limits) are retried with
exponential backoff; ``Retry-After`` and GitHub's ``X-RateLimit-Reset`` set the wait when the
server gives one. Anything else fails at once. Errors name the URL and what was being fetched,
never the token. Every retry is announced to whoever watches (``liger_warehouse.runtime.progress.notice``) and
logged, so a silent upstream is never a silent wait.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from liger_warehouse.runtime import progress
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.storage import Storage

log = logging.getLogger(__name__)

RETRY_STATUSES = {408, 500, 502, 503, 504}


class UpstreamError(RuntimeError):
    """A download that failed for good; the message names the URL and the revision."""


class UpstreamUnreachable(UpstreamError):
    """No connection to upstream at all, on every attempt: offline, no DNS, refused, black-holed."""


class _Transient(Exception):
    def __init__(self, message: str, wait_hint: float | None = None) -> None:
        super().__init__(message)
        self.wait_hint = wait_hint


class _NoConnection(_Transient):
    """The connection itself failed: nothing was said by a server."""


@dataclass(frozen=True)
class HttpPolicy:
    timeout: float = 30.0
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    max_wait: float = 300.0
    max_bytes: int = 256 * 1024 * 1024
    max_redirects: int = 5


@dataclass
class Fetched:
    body: bytes
    link: str | None = None

    @property
    def next_url(self) -> str | None:
        """The rel="next" target of a paginated GitHub answer."""
        match = re.search(r'<([^>]+)>;\s*rel="next"', self.link or "")
        return match.group(1) if match else None


class ConditionalCache:
    """ETag and body of the last 200 answer per URL, for conditional re-requests of listings."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    @staticmethod
    def _key(url: str) -> str:
        return f"state/http/{hashlib.sha256(url.encode()).hexdigest()}.json"

    def get(self, url: str) -> dict | None:
        key = self._key(url)
        return json.loads(self.storage.read_text(key)) if self.storage.exists(key) else None

    def put(self, url: str, etag: str, body: bytes, link: str | None) -> None:
        try:
            entry = {"url": url, "etag": etag, "body": body.decode("utf-8"), "link": link}
        except UnicodeDecodeError:
            return  # not text: simply not cached, fetched whole next time
        self.storage.write_text(self._key(url), json.dumps(entry))


class HttpClient:
    """Counts requests and content bytes so refreshes can report what they cost."""

    def __init__(
        self,
        policy: HttpPolicy | None = None,
        token: str | None = None,
        cache: ConditionalCache | None = None,
    ) -> None:
        self.policy = policy or HttpPolicy()
        self._token = token
        self.cache = cache
        self.requests = 0
        self.bytes_downloaded = 0
        self._client = httpx.Client(
            timeout=self.policy.timeout,
            follow_redirects=True,
            max_redirects=self.policy.max_redirects,
            headers={"User-Agent": "liger-warehouse"},
        )

    def close(self) -> None:
        self._client.close()

    def get(self, url: str, *, what: str, conditional: bool = False, accept: str | None = None) -> Fetched | None:
        """GET ``url``; None on 404. ``what`` names the revision or listing in errors."""
        if not url.startswith(("http://", "https://")):
            raise UpstreamError(f"{what}: refusing non-HTTP URL {url}")
        retrying = Retrying(
            stop=stop_after_attempt(self.policy.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Transient),
            before_sleep=lambda state: self._announce_retry(state, url, what),
            reraise=True,
        )
        try:
            return retrying(self._get_once, url, what, conditional, accept)
        except _Transient as exc:
            kind = UpstreamUnreachable if isinstance(exc, _NoConnection) else UpstreamError
            tries = "1 attempt" if self.policy.max_attempts == 1 else f"{self.policy.max_attempts} attempts"
            raise kind(f"{what}: giving up on {url} after {tries}: {exc}") from None

    def _announce_retry(self, state: RetryCallState, url: str, what: str) -> None:
        wait = state.next_action.sleep if state.next_action else 0.0
        message = (
            f"{urlsplit(url).netloc}: {what}: {state.outcome.exception()} "
            f"(attempt {state.attempt_number} of {self.policy.max_attempts}); retrying in {wait:.3g}s"
        )
        log.warning("%s", message)
        progress.notice(message)

    def _headers(self, url: str, conditional: bool, accept: str | None) -> dict[str, str]:
        headers = {}
        if accept:
            headers["Accept"] = accept
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if conditional and self.cache and (cached := self.cache.get(url)):
            headers["If-None-Match"] = cached["etag"]
        return headers

    def _get_once(self, url: str, what: str, conditional: bool, accept: str | None) -> Fetched | None:
        self.requests += 1
        try:
            with self._client.stream("GET", url, headers=self._headers(url, conditional, accept)) as resp:
                return self._read(resp, url, what, conditional)
        except httpx.TooManyRedirects:
            # A CDN caught in a loop recovers like a 5xx does; the retries stay bounded.
            raise _Transient(f"more than {self.policy.max_redirects} redirects") from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise _NoConnection(f"{type(exc).__name__}: {exc}") from None
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from None

    def _read(self, resp: httpx.Response, url: str, what: str, conditional: bool) -> Fetched | None:
        status = resp.status_code
        if status == 304 and self.cache and (cached := self.cache.get(url)):
            return Fetched(cached["body"].encode("utf-8"), link=cached["link"])
        if status == 404:
            return None
        self._raise_for_status(resp, url, what)
        body = self._capped_body(resp, url, what)
        if _looks_like_html(resp.headers.get("Content-Type", ""), body):
            raise _Transient(f"HTTP {status} sent an HTML page, not the file")
        self.bytes_downloaded += len(body)
        link = resp.headers.get("Link")
        if conditional and self.cache and (etag := resp.headers.get("ETag")):
            self.cache.put(url, etag, body, link)
        return Fetched(body, link=link)

    def _raise_for_status(self, resp: httpx.Response, url: str, what: str) -> None:
        status = resp.status_code
        if status in RETRY_STATUSES:
            raise _Transient(f"HTTP {status}")
        wait = self._rate_limit_wait(resp) if status in (403, 429) else None
        if wait is not None or status == 429:
            if wait is not None and wait > self.policy.max_wait:
                raise UpstreamError(
                    f"{what}: rate limited by {url} for {wait:.0f}s more "
                    f"(longer than the {self.policy.max_wait:.0f}s this refresh waits); "
                    "set GITHUB_TOKEN for a higher limit"
                )
            raise _Transient(f"HTTP {status} rate limited", wait_hint=wait)
        if status >= 300:
            raise UpstreamError(f"{what}: HTTP {status} from {url}")

    @staticmethod
    def _rate_limit_wait(resp: httpx.Response) -> float | None:
        headers = resp.headers
        if (after := headers.get("Retry-After")) is not None:
            try:
                return max(0.0, float(after))
            except ValueError:
                return None
        if headers.get("X-RateLimit-Remaining") == "0" and (reset := headers.get("X-RateLimit-Reset")):
            try:
                return max(0.0, float(reset) - time.time())
            except ValueError:
                return None
        # A 429 without a hint backs off exponentially; a plain 403 is a refusal.
        return None

    def _capped_body(self, resp: httpx.Response, url: str, what: str) -> bytes:
        cap = self.policy.max_bytes
        declared = resp.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > cap:
            raise UpstreamError(f"{what}: {url} declares {declared} bytes, over the {cap}-byte cap")
        body = bytearray()
        for n, chunk in enumerate(resp.iter_bytes()):
            body += chunk
            if n == 0:
                failpoint("downloading")  # part of the body received, the rest still to come
            if len(body) > cap:
                raise UpstreamError(f"{what}: {url} sent more than the {cap}-byte cap")
        return bytes(body)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint = getattr(exc, "wait_hint", None)
        if hint is not None:
            return min(hint, self.policy.max_wait)
        backoff = self.policy.backoff_base * 2 ** (state.attempt_number - 1)
        return min(backoff, self.policy.backoff_max)


def _looks_like_html(content_type: str, body: bytes) -> bool:
    """GitHub serves CSV as text/plain and JSON as application/json. An HTML page in their
    place is an error page (an outage, a proxy, a captive portal), never upstream's data."""
    head = body[:256].lstrip().lower()
    return "text/html" in content_type.lower() or head.startswith((b"<!doctype html", b"<html"))
