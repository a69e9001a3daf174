"""Where the warehouse keeps its bytes: raw snapshots, Parquet parts and generations."""
