"""Where a digest goes: each webhook of ``LIGER_WAREHOUSE_ALERT_WEBHOOK`` receives it by HTTP POST.

A plain URL receives the digest's JSON; a URL written ``slack:https://…`` receives a Slack-style
incoming-webhook body, ``{"text": <the digest in Markdown>}`` (Slack, Mattermost, Discord's
``/slack`` endpoint and most chat tools take it). Each POST is retried a few times; a webhook that
still fails is reported to the caller, who logs it: an alert never fails the refresh it reports on.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

SLACK = "slack:"
ATTEMPTS = 3
TIMEOUT_SECONDS = 10.0


class WebhookError(ValueError):
    """A webhook setting the warehouse cannot use; the message names it."""


@dataclass(frozen=True)
class Webhook:
    url: str
    slack: bool

    @property
    def shown(self) -> str:
        """The URL without its path: incoming-webhook paths are secrets."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/…"


def parse_webhooks(setting: str | None) -> list[Webhook]:
    """The webhooks of a setting: URLs separated by spaces or commas, each http(s)."""
    hooks = []
    for word in (setting or "").replace(",", " ").split():
        slack = word.startswith(SLACK)
        url = word.removeprefix(SLACK)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise WebhookError(f"alert webhook {word!r} is not an http(s) URL")
        hooks.append(Webhook(url, slack))
    return hooks


class _Unavailable(Exception):
    """An answer worth another try: a server error or a rate limit."""


class _Refused(Exception):
    """An answer that another try would not change."""


# What a failed alert delivery raises, once its tries are spent.
FAILED = (httpx.HTTPError, _Unavailable, _Refused)


def checked(response: httpx.Response) -> httpx.Response:
    """``response``, or the exception its status calls for (retried or not: ``retrying``)."""
    if response.status_code >= 500 or response.status_code == 429:
        raise _Unavailable(f"HTTP {response.status_code}")
    if response.status_code >= 400:
        raise _Refused(f"HTTP {response.status_code}")
    return response


def retrying() -> Retrying:
    """A few tries, backing off, of a call that failed on the network, a server error or a rate limit."""
    return Retrying(
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_exponential(multiplier=0.5, max=5),
        retry=retry_if_exception_type((httpx.TransportError, _Unavailable)),
        reraise=True,
    )


def alert_client(headers: dict[str, str] | None = None) -> httpx.Client:
    return httpx.Client(timeout=TIMEOUT_SECONDS, headers={"User-Agent": "liger-warehouse", **(headers or {})})


def send_digest(hooks: list[Webhook], digest: dict, markdown: str) -> list[str]:
    """POST the digest to every webhook; what failed, one line each (empty when all took it)."""
    failures = []
    with alert_client() as client:
        for hook in hooks:
            body = {"text": markdown} if hook.slack else digest
            try:
                retrying()(lambda: checked(client.post(hook.url, json=body)))  # noqa: B023 (called at once)
            except FAILED as exc:
                failures.append(f"alert webhook {hook.shown}: {type(exc).__name__}: {exc}".splitlines()[0])
    return failures
