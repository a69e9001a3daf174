"""The lake's upkeep, all of it DuckLake's own: small files merged, snapshots past the retention
expired, and files no snapshot references (expired ones', a killed writer's) deleted."""

from __future__ import annotations

from dataclasses import dataclass

from liger_warehouse.lake.connect import open_lake
from liger_warehouse.lake.location import ALIAS, Lake

# Time travel reaches this far back; older snapshots are expired and their files deleted.
KEEP_SNAPSHOTS_FOR = "30 days"
# A file written within this window may belong to a refresh still running: never deleted.
ORPHAN_GRACE = "1 day"


@dataclass(frozen=True)
class Maintained:
    merged: int
    expired: int
    deleted: int


def maintain(lake: Lake, keep: str = KEEP_SNAPSHOTS_FOR, grace: str = ORPHAN_GRACE) -> Maintained:
    """Merge adjacent small files, expire snapshots older than ``keep``, then delete the files
    only expired snapshots referenced and orphaned files older than ``grace``."""
    with open_lake(lake) as con:
        merged = con.execute(f"call ducklake_merge_adjacent_files('{ALIAS}')").fetchall()
        expired = con.execute(
            f"call ducklake_expire_snapshots('{ALIAS}', older_than => now() - interval '{keep}')"
        ).fetchall()
        old = con.execute(f"call ducklake_cleanup_old_files('{ALIAS}', cleanup_all => true)").fetchall()
        orphans = con.execute(
            f"call ducklake_delete_orphaned_files('{ALIAS}', older_than => now() - interval '{grace}')"
        ).fetchall()
    return Maintained(merged=sum(row[2] for row in merged), expired=len(expired), deleted=len(old) + len(orphans))
