"""What pyproject.toml cannot say: the analytic views stay in the top-level ``sql/`` directory
and ship inside the package as ``pipelines.sql`` (read with importlib.resources; its macros/,
views/ and derived/ folders), so that a wheel, not only an editable install, builds
liger.duckdb with every view."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["pipelines*"]), "pipelines.sql"],
    package_dir={"pipelines.sql": "sql"},
    package_data={"pipelines": ["**/*.json"], "pipelines.sql": ["macros/*.sql", "views/*.sql", "derived/*.sql"]},
)
