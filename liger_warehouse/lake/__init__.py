"""The warehouse's tables, views and macros in a DuckLake: a catalog (SQLite or PostgreSQL) and
Parquet data files, with snapshots, transactions and maintenance from DuckLake itself."""
