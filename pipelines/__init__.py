"""The Dagster code location of liger-warehouse: definitions.py loads the assets, checks, jobs,
schedules and resources of defs/, which wire the plain modules of ``liger_warehouse``."""
