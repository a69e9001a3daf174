"""The analytic views of liger.duckdb: one ``create or replace view`` (or macro) per ``.sql`` file.

Installed as the package ``liger_warehouse.sql`` (setup.py); ``liger_warehouse.serve.database`` reads the files
with importlib.resources. This file holds no code: it makes the directory a package.
"""
