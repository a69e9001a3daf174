"""GitHub's semantics in the fake: the list-commits API (paging, Link headers, ETags, the
rate-limit budget, tokens) and the raw-content host, served from a mirror directory."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

API_PREFIX = "/api/v3"
RAW_PREFIX = "/raw"
DEFAULT_PER_PAGE = 30
GITHUB_PER_PAGE_MAX = 100
JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
HTML = "text/html; charset=utf-8"
RAW_NOT_FOUND = b"404: Not Found"
API_DOCS = "https://docs.github.com/rest"
_STEM_RE = re.compile(r"benchmark/data/([A-Za-z0-9_][A-Za-z0-9_.-]*)\.csv")
_COMMITS_RE = re.compile(r"/repos/([^/]+)/([^/]+)/commits/?")
_COMPARE_RE = re.compile(r"/repos/([^/]+)/([^/]+)/compare/([0-9a-f]{7,40})\.\.\.([0-9a-f]{7,40})")


@dataclass
class Response:
    code: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


class GitHubRoutes:
    """The normal answers of the API and the raw host; ``FakeGitHub`` owns the state they read."""

    owner: str
    repo: str
    mirror_dir: Path
    per_page_max: int
    require_token: str | None
    rate_limit: int
    _root: Path
    _lock: threading.Lock
    _replacements: dict[str, bytes | None]
    _rate_remaining: int
    _rate_reset: int
    origin: str  # http://127.0.0.1:<port>, a property of the running server

    def _route(self, target: str, req_headers: dict[str, str]) -> Response:
        parts = urlsplit(target)
        if parts.path.startswith(API_PREFIX + "/"):
            return self._api(parts.path, parts.query, req_headers)
        if parts.path.startswith(RAW_PREFIX + "/"):
            return self._raw(parts.path, req_headers)
        return Response(404, [("Content-Type", TEXT)], RAW_NOT_FOUND)

    def _is_us(self, owner: str, repo: str) -> bool:
        return owner.lower() == self.owner.lower() and repo.lower() == self.repo.lower()

    def _replacement(self, url_path: str) -> tuple[bool, bytes | None]:
        key = unquote(url_path)
        with self._lock:
            if key in self._replacements:
                return True, self._replacements[key]
        return False, None

    def _api(self, url_path: str, query: str, req_headers: dict[str, str]) -> Response:
        def json_response(code: int, payload: object, *, spend: bool = False) -> Response:
            body = json.dumps(payload, ensure_ascii=False).encode()
            return self._api_response(code, body, req_headers, spend=spend)

        if self.require_token is not None:
            given = _bearer(req_headers.get("authorization", ""))
            if given is None:
                return json_response(401, {"message": "Requires authentication", "documentation_url": API_DOCS})
            if given != self.require_token:
                return json_response(401, {"message": "Bad credentials", "documentation_url": API_DOCS})
        not_found = {"message": "Not Found", "documentation_url": API_DOCS, "status": "404"}
        replaced, body = self._replacement(url_path)
        if replaced:
            if body is None:
                return json_response(404, not_found)
            return self._api_response(200, body, req_headers, spend=True)
        route = url_path[len(API_PREFIX) :]
        m = _COMMITS_RE.fullmatch(route) or _COMPARE_RE.fullmatch(route)
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
                    "documentation_url": API_DOCS,
                },
            )
        if m.re is _COMPARE_RE:
            # The mirror holds only consecutive runs' compares; GitHub would answer any pair.
            found = self._inside(self.mirror_dir / "compare" / f"{m[3]}...{m[4]}.json")
            if found is None:
                return json_response(404, not_found)
            return self._api_response(200, found.read_bytes(), req_headers, spend=True)

        params = parse_qsl(query, keep_blank_values=True)
        args = dict(params)
        try:
            since = _parse_time(args.get("since"))
            until = _parse_time(args.get("until"))
        except ValueError as exc:
            return json_response(422, {"message": str(exc), "documentation_url": API_DOCS})
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

    def _api_response(self, code: int, body: bytes, req_headers: dict[str, str], *, spend: bool) -> Response:
        etag = _etag(body)
        not_modified = code == 200 and _matches_etag(req_headers.get("if-none-match"), etag)
        with self._lock:
            # Conditional hits are free on GitHub, which is why clients send If-None-Match.
            if spend and code == 200 and not not_modified:
                self._rate_remaining = max(self._rate_remaining - 1, 0)
            remaining = self._rate_remaining
        headers = [
            ("Content-Type", JSON),
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
            return Response(304, headers)
        return Response(code, headers, body)

    def _commits_for(self, file_path: str) -> list[dict[str, Any]]:
        m = _STEM_RE.fullmatch(file_path)
        if m is None or ".." in m.group(1):
            return []
        path = self._inside(self.mirror_dir / "commits" / f"{m.group(1)}.json")
        if path is None:
            return []
        data = json.loads(path.read_bytes())
        return data if isinstance(data, list) else []

    def _raw(self, url_path: str, req_headers: dict[str, str]) -> Response:
        not_found = Response(404, [("Content-Type", TEXT)], RAW_NOT_FOUND)
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

    def _raw_ok(self, body: bytes, req_headers: dict[str, str]) -> Response:
        etag = _etag(body)
        headers = [
            ("Content-Type", TEXT),
            ("Cache-Control", "max-age=300"),
            ("ETag", etag),
            ("X-Content-Type-Options", "nosniff"),
        ]
        if _matches_etag(req_headers.get("if-none-match"), etag):
            return Response(304, headers)
        return Response(200, headers, body)

    def _inside(self, path: Path) -> Path | None:
        """`path` if it is a regular file that resolves inside the mirror, else None."""
        try:
            resolved = path.resolve()
        except OSError:
            return None
        if not resolved.is_relative_to(self._root) or not resolved.is_file():
            return None
        return resolved


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
