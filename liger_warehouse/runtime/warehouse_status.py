"""What ``liger-warehouse status`` reports: the newest upstream revision the warehouse holds per
source, and how far upstream is ahead of it; and whether a refresh would find anything to do."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from liger_warehouse.model.digests import content_digest
from liger_warehouse.model.revisions import GH_PAGES, UpstreamListing, revision_digest

REVISION_COLUMNS = ["revision_digest", "source", "path", "run", "commit", "seq", "committed_at", "is_upstream"]


@dataclass
class Head:
    """The newest revision of one upstream source that the warehouse holds."""

    source: str  # main: one per CSV path; gh-pages: all runs together
    name: str  # the CSV's file name, or "benchmark runs"
    revision: str  # the commit (main) or the run name (gh-pages)
    committed_at: str  # "" when upstream gives no time (gh-pages runs)
    revisions: int  # how many revisions of this source the warehouse holds


def read_revisions(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Every row of ``dim_upstream_revision`` that ``con`` (a reader of the lake) sees, in
    ``REVISION_COLUMNS``."""
    cursor = con.execute(f"select {', '.join(REVISION_COLUMNS)} from dim_upstream_revision")
    return [dict(zip(REVISION_COLUMNS, row, strict=True)) for row in cursor.fetchall()]


def held_golden(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The content digest of the golden runs file the lake holds (none or one)."""
    return [digest for (digest,) in con.execute("select content_digest from golden_commit limit 1").fetchall()]


def _group(row: dict) -> tuple[str, str]:
    # Every gh-pages run is its own source_key; as a head they count as one source.
    if row["source"] == GH_PAGES:
        return GH_PAGES, "benchmark runs"
    return row["source"], row["path"].rsplit("/", 1)[-1]


def upstream_heads(revisions: list[dict]) -> list[Head]:
    """The newest revision per source in ``dim_upstream_revision`` that upstream still lists,
    by upstream order (``seq``)."""
    newest: dict[tuple[str, str], dict] = {}
    counts: dict[tuple[str, str], int] = {}
    for row in revisions:
        key = _group(row)
        counts[key] = counts.get(key, 0) + 1
        if not row["is_upstream"]:
            continue  # upstream no longer lists it, so it cannot be upstream's head
        if key not in newest or row["seq"] > newest[key]["seq"]:
            newest[key] = row
    return [
        Head(
            source=key[0],
            name=key[1],
            revision=row["run"] if row["source"] == GH_PAGES else row["commit"][:12],
            committed_at=str(row["committed_at"] or ""),
            revisions=counts[key],
        )
        for key, row in sorted(newest.items())
    ]


def behind(revisions: list[dict], listing: UpstreamListing) -> dict[tuple[str, str], int]:
    """Per source, how many revisions upstream lists that the warehouse does not hold yet."""
    held = {row["revision_digest"] for row in revisions}
    out: dict[tuple[str, str], int] = {}
    for ref in listing.revisions:
        key = _group({"source": ref.source, "path": ref.path})
        out[key] = out.get(key, 0) + (revision_digest(ref) not in held)
    return out


def upstream_as_published(revisions: list[dict], golden: list[str], listing: UpstreamListing) -> bool:
    """Whether ``listing`` shows upstream exactly as the lake holds it (``revisions`` and the
    ``golden`` runs file's digest, from ``read_revisions`` and ``held_golden``), so that a
    refresh would ingest, restate and relabel nothing: every revision it lists is held and
    marked as listed, no held revision is marked listed that it no longer lists, and the golden
    runs file is the one held. A listing with problems (a path it could not list) is never the
    same: the refresh reports them."""
    listed = {revision_digest(ref) for ref in listing.revisions}
    marked = {row["revision_digest"] for row in revisions if row["is_upstream"]}
    same_golden = listing.golden_commits is None or golden == [content_digest(listing.golden_commits)]
    return not listing.problems and same_golden and marked == listed
