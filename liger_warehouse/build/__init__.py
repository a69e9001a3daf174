"""Building a generation: from raw snapshots to staged Parquet parts and dimensions."""
