"""Publishing: raw snapshots ingested into the lake with change points, derived tables and checks,
in one transaction."""
