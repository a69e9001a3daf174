"""What pyproject.toml cannot say: the analytic views stay in the top-level ``sql/`` directory
and ship inside the package as ``liger_warehouse.sql`` (read with importlib.resources; its macros/,
views/ and derived/ folders), so that a wheel, not only an editable install, builds
liger.duckdb with every view. ``pipelines`` is the Dagster code location beside it."""

from setuptools import find_packages, setup

setup(
    # sql/'s folders are listed too: setuptools sees them as importable (namespace) packages and
    # warns on every build about any it is not given.
    packages=[
        *find_packages(include=["liger_warehouse*", "pipelines*"]),
        *(f"liger_warehouse.sql{sub}" for sub in ("", ".macros", ".views", ".derived")),
    ],
    package_dir={"liger_warehouse.sql": "sql"},
    package_data={
        "liger_warehouse": ["**/*.json"],
        "liger_warehouse.sql": ["macros/*.sql", "views/*.sql", "derived/*.sql"],
    },
)
