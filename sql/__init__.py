"""The lake's macros, views and derived tables: one object per ``.sql`` file, created in the lake's
catalog at publish.

Installed as the package ``liger_warehouse.sql`` (setup.py); ``liger_warehouse.lake.objects`` reads the
files with importlib.resources. This file holds no code: it makes the directory a package.
"""
