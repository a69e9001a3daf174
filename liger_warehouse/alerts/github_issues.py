"""Optionally, a GitHub issue per kernel and pass with a newly confirmed regression: opened, or
commented on when an issue of that title is open already. Behind two settings,
``LIGER_WAREHOUSE_ALERT_GITHUB_REPO`` (owner/name) and ``LIGER_WAREHOUSE_ALERT_GITHUB_TOKEN`` (a
token that may write its issues); the API base is the upstream's (``LIGER_WAREHOUSE_GITHUB_API``).
Every call is tried a few times (``webhook.retrying``); what still fails is reported to the
caller, who logs it: an issue never fails the refresh it reports on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from liger_warehouse.alerts.digest import line_items
from liger_warehouse.alerts.webhook import FAILED, WebhookError, alert_client, checked, retrying

LABEL = "benchmark-regression"
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class IssueTracker:
    api: str
    repo: str
    token: str


def issue_tracker(api: str, repo: str | None, token: str | None) -> IssueTracker | None:
    """The tracker the settings name, None when they name none; an error for half a setting."""
    if not repo and not token:
        return None
    if not (repo and token):
        raise WebhookError(
            "GitHub issues need both LIGER_WAREHOUSE_ALERT_GITHUB_REPO and LIGER_WAREHOUSE_ALERT_GITHUB_TOKEN"
        )
    if not _REPO.fullmatch(repo):
        raise WebhookError(f"LIGER_WAREHOUSE_ALERT_GITHUB_REPO {repo!r} is not owner/name")
    return IssueTracker(api.rstrip("/"), repo, token)


def confirmed_lines(digest: dict) -> list[tuple[dict, dict]]:
    """(entry, line) of each regression line with a confirmed series: a new run's (a change point
    confirms it already) and the run before's, as the new runs confirm it (``follow_up``)."""
    entries = [*digest["runs"], *([digest["follow_up"]] if digest.get("follow_up") else [])]
    return [
        (entry, line)
        for entry in entries
        for line in entry["lines"]
        if line["verdict"] == "regression" and line["confirmed"] > 0
    ]


def title(line: dict) -> str:
    return f"Benchmark regression: {line['kernel']} {line['mode']}"


def body(entry: dict, line: dict, digest: dict) -> str:
    """The line as the digest says it, with its run step and where the whole digest is."""
    detail = "\n".join(line_items({"lines": [line], "left_out": []}))
    return f"Run {entry['run']} against {entry['previous_run']} (digest {digest['digest']}):\n\n{detail}\n"


def file_issues(tracker: IssueTracker, digest: dict) -> tuple[list[str], list[str]]:
    """Open or comment on an issue per confirmed regression line; the issues touched and what
    failed, one line each."""
    done, failures = [], []
    headers = {"Authorization": f"Bearer {tracker.token}", "Accept": "application/vnd.github+json"}
    issues = f"{tracker.api}/repos/{tracker.repo}/issues"
    with alert_client(headers) as client:
        for entry, line in confirmed_lines(digest):
            try:
                done.append(_file(client, issues, title(line), body(entry, line, digest)))
            except FAILED as exc:
                failures.append(f"GitHub issue {title(line)!r}: {type(exc).__name__}: {exc}".splitlines()[0])
    return done, failures


def _file(client: httpx.Client, issues: str, name: str, text: str) -> str:
    listed = retrying()(lambda: checked(client.get(issues, params={"state": "open", "labels": LABEL, "per_page": 100})))
    number = next((i["number"] for i in listed.json() if i.get("title") == name), None)
    if number is None:
        made = retrying()(lambda: checked(client.post(issues, json={"title": name, "body": text, "labels": [LABEL]})))
        return f"opened #{made.json()['number']} {name}"
    retrying()(lambda: checked(client.post(f"{issues}/{number}/comments", json={"body": text})))
    return f"commented on #{number} {name}"
