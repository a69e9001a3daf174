"""The compares of consecutive gh-pages runs, from the raw store into lake rows.

GitHub's compare of two commits (kept in the raw store by ``upstream/compare.py``) becomes one
``fact_run_compare`` row for the pair of runs, one ``fact_compare_commit`` row per commit and one
``fact_compare_file`` row per changed file. A compare of two commits never changes, so a pair the
lake holds is never read again; one that will not read is named in the refresh's warnings and
tried again by the next refresh, never failing it.
"""

from __future__ import annotations

import json
import re
import zlib
from datetime import UTC, datetime

import pyarrow as pa

from liger_warehouse.model.tables import COMPARE_TABLES, SCHEMAS, empty
from liger_warehouse.model.versions import split_run_name
from liger_warehouse.store.raw import RawStore, SnapshotTooLarge
from liger_warehouse.upstream.compare import run_pair

# The pull request a squash merge names at the end of its title: "Fix softmax (#1054)".
_PULL_REQUEST = re.compile(r"\(#(\d+)\)")


class CompareUnreadable(ValueError):
    """A stored compare that is not GitHub's compare of two commits."""


def read_compares(
    raw: RawStore, pairs: list[tuple[str, str]], held: set[tuple[str, str]]
) -> tuple[dict[str, pa.Table], list[str]]:
    """The rows of the compare of each pair of runs (base, head) the raw store holds and ``held``
    lacks, by lake table, and a warning naming each stored compare that will not read."""
    read: list[dict[str, pa.Table]] = []
    warnings: list[str] = []
    for base_run, head_run in dict.fromkeys(p for p in pairs if p not in held):
        key = run_pair(base_run, head_run).key
        try:
            body = raw.get_compare(key)
            if body is not None:
                read.append(compare_tables(base_run, head_run, body))
        except (CompareUnreadable, SnapshotTooLarge, OSError, EOFError, zlib.error) as exc:
            warnings.append(f"{raw.compare_key(key)}: compare of {base_run} and {head_run} skipped: {exc}")
    tables = {name: pa.concat_tables([empty(name), *(t[name] for t in read)]) for name in COMPARE_TABLES}
    return tables, warnings


def compare_tables(base_run: str, head_run: str, body: bytes) -> dict[str, pa.Table]:
    """The rows of the compare ``body`` of runs ``base_run`` and ``head_run``, by lake table;
    ``CompareUnreadable`` when it is not GitHub's compare of two commits."""
    try:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("status"), str):
            raise TypeError("no status")
        pair = {"base_run": base_run, "head_run": head_run}
        rows = {
            "fact_run_compare": [_run_row(pair, data)],
            "fact_compare_commit": [_commit_row(pair, i, c) for i, c in enumerate(data["commits"])],
            "fact_compare_file": [{**pair, **_file_fields(f)} for f in data.get("files") or []],
        }
        return {name: pa.Table.from_pylist(rows[name], schema=SCHEMAS[name]) for name in COMPARE_TABLES}
    except KeyError as exc:
        raise CompareUnreadable(f"not a compare of two commits: no {exc}") from None
    except (ValueError, TypeError, AttributeError, pa.ArrowException) as exc:
        raise CompareUnreadable(f"not a compare of two commits: {exc}") from None


def _run_row(pair: dict, data: dict) -> dict:
    base_commit, head_commit = (split_run_name(pair[side])[0] for side in ("base_run", "head_run"))
    base, merge_base = data.get("base_commit") or {}, data.get("merge_base_commit") or {}
    return {
        **pair,
        "base_commit": base_commit,
        "head_commit": head_commit,
        "status": data["status"],
        "ahead_by": data.get("ahead_by"),
        "behind_by": data.get("behind_by"),
        "total_commits": data.get("total_commits"),
        "base_committed_at": _committed_at(base),
        "head_committed_at": _head_committed_at(head_commit, data),
        "merge_base_commit": (merge_base.get("sha") or "")[:7] or None,
        "merge_base_committed_at": _committed_at(merge_base),
    }


def _head_committed_at(head: str, data: dict) -> datetime | None:
    """The head's commit date, wherever the compare shows the head commit: the last of the commits
    (ahead, diverged), the merge base (behind: the head is older code) or the base (identical).
    None when no commit listed is the head (a range longer than GitHub's first page)."""
    shown = [*reversed(data["commits"]), data.get("merge_base_commit") or {}, data.get("base_commit") or {}]
    return next((_committed_at(c) for c in shown if (c.get("sha") or "").startswith(head)), None)


def _commit_row(pair: dict, position: int, item: dict) -> dict:
    commit = item.get("commit") or {}
    message = commit.get("message") or ""
    title = message.split("\n", 1)[0]
    numbers = _PULL_REQUEST.findall(title)
    return {
        **pair,
        "position": position,
        "sha": item["sha"],
        "title": title,
        "pr_number": int(numbers[-1]) if numbers else None,
        "author": (commit.get("author") or {}).get("name"),
        "committed_at": _committed_at(item),
        "message": message,
        "html_url": item.get("html_url"),
    }


def _file_fields(item: dict) -> dict:
    fields = ("status", "additions", "deletions", "changes")
    return {"filename": item["filename"], **{f: item.get(f) for f in fields}}


def _committed_at(item: dict) -> datetime | None:
    """The committer's date of a commit of the compare (its author's when there is none), UTC."""
    commit = item.get("commit") or {}
    text = (commit.get("committer") or {}).get("date") or (commit.get("author") or {}).get("date")
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)
