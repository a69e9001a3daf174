"""Serving: liger.duckdb, its views over the Parquet parts, and read-only statements."""
