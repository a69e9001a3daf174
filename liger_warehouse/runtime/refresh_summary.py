"""What one refresh ingested, as Markdown for the Dagster UI: revisions linked to their commits."""

from __future__ import annotations

import re

from liger_warehouse.model.versions import is_valid_run_name, split_run_name

DEFAULT_REPOSITORY_URL = "https://github.com/linkedin/Liger-Kernel"
MAX_LISTED = 200


def repository_url(upstream: str) -> str:
    """The GitHub web page of the upstream repository.

    A mirror directory holds linkedin/Liger-Kernel, so it links there too.
    """
    match = re.fullmatch(r"github:([A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+)", upstream)
    return f"https://github.com/{match.group(1)}" if match else DEFAULT_REPOSITORY_URL


def commit_url(revision: dict, repo_url: str = DEFAULT_REPOSITORY_URL) -> str | None:
    """The GitHub page of the commit behind one ingested revision.

    Main-branch revisions carry GitHub's own ``html_url``. A gh-pages run is named after the
    benchmarked commit (``<7 hex>[-v<version>]``), so its link is built from that prefix.
    """
    if revision.get("html_url"):
        return revision["html_url"]
    commit = revision.get("commit") or ""
    if is_valid_run_name(commit):
        return f"{repo_url}/commit/{split_run_name(commit)[0]}"
    return None


def _short_commit(commit: str) -> str:
    return (split_run_name(commit)[0] if is_valid_run_name(commit) else commit)[:12]


def _cell(text: str) -> str:
    # A "|" inside a cell would end it; labels hold paths and run names, but be safe.
    return str(text).replace("|", "\\|")


def revisions_markdown(revisions: list[dict], repo_url: str = DEFAULT_REPOSITORY_URL) -> str:
    """A table of the revisions one refresh ingested, each linked to its commit."""
    if not revisions:
        return "no upstream revision ingested"
    lines = ["| revision | commit | rows | new results | quarantined |", "|---|---|---:|---:|---:|"]
    for r in revisions[:MAX_LISTED]:
        url = commit_url(r, repo_url)
        short = _cell(_short_commit(r.get("commit") or ""))
        commit = f"[{short}]({url})" if url else short
        lines.append(f"| {_cell(r['revision'])} | {commit} | {r['rows']} | {r['new_results']} | {r['quarantined']} |")
    if len(revisions) > MAX_LISTED:
        lines.append(f"\n… and {len(revisions) - MAX_LISTED} more revisions")
    return "\n".join(lines)
