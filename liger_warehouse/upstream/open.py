"""Turn an upstream setting (``github:owner/repo`` or a mirror directory) into a reader."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from liger_warehouse import settings as env
from liger_warehouse.model.revisions import DEFAULT_PATHS
from liger_warehouse.settings import DEFAULT_API_BASE, DEFAULT_RAW_BASE, DEFAULT_UPSTREAM
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.http import ConditionalCache, HttpClient, HttpPolicy, UpstreamError
from liger_warehouse.upstream.sources import GITHUB_PREFIX, GitHubUpstream, MirrorUpstream, Upstream


@dataclass(frozen=True)
class UpstreamSettings:
    upstream: str = DEFAULT_UPSTREAM
    api_base: str = DEFAULT_API_BASE
    raw_base: str = DEFAULT_RAW_BASE
    token: str | None = None
    paths: tuple[str, ...] = DEFAULT_PATHS
    policy: HttpPolicy = field(default_factory=HttpPolicy)

    def __repr__(self) -> str:
        # Keeps the token out of logs and tracebacks that print the settings.
        return f"UpstreamSettings(upstream={self.upstream!r}, api_base={self.api_base!r}, raw_base={self.raw_base!r})"


def open_upstream(settings: UpstreamSettings, state: Storage) -> Upstream:
    """A reader for ``settings.upstream``; listings' ETags are cached in ``state``."""
    spec = settings.upstream
    if spec.startswith(GITHUB_PREFIX):
        repo = spec.removeprefix(GITHUB_PREFIX)
        names = repo.split("/")
        # "." and ".." pass the character class but would walk the API's URL paths.
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", repo) or {".", ".."} & set(names):
            raise UpstreamError(f"upstream {spec!r}: expected github:OWNER/REPO")
        for base in (settings.api_base, settings.raw_base):
            if not base.startswith(("http://", "https://")):
                raise UpstreamError(f"upstream base URL {base!r} must be http or https")
        http = HttpClient(settings.policy, settings.token, ConditionalCache(state))
        return GitHubUpstream(repo, settings.api_base, settings.raw_base, http, settings.paths)
    if "://" in spec:
        raise UpstreamError(f"upstream {spec!r}: only github:OWNER/REPO or a local directory are allowed")
    root = Path(spec).expanduser()
    if not root.is_dir():
        raise UpstreamError(f"upstream {spec!r}: no such directory")
    return MirrorUpstream(root.resolve(), settings.paths, settings.policy.max_bytes)


def settings_from_env(upstream: str | None = None) -> UpstreamSettings:
    """The settings the ``upstream`` resource reads, for code that runs outside Dagster;
    ``upstream``, when given, in place of the configured one."""
    s = env.current()
    policy = HttpPolicy(
        timeout=s.timeout_seconds,
        max_attempts=s.max_attempts,
        backoff_base=s.backoff_seconds,
        max_bytes=s.max_download_mb * 1024 * 1024,
    )
    return UpstreamSettings(upstream or s.upstream, s.github_api, s.github_raw, s.github_token, policy=policy)
