"""deploy/dagster.yaml, made runnable on one machine for tests: SQLite stands in for Postgres."""

from __future__ import annotations

from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
PRODUCTION_CONFIG = DEPLOY / "dagster.yaml"


def local_dagster_home(home: Path) -> Path:
    """Write ``home/dagster.yaml``: the production configuration with its storage in ``home``."""
    config = yaml.safe_load(PRODUCTION_CONFIG.read_text())
    config["storage"] = {"sqlite": {"base_dir": str(home)}}
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return home
