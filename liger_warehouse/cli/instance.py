"""The Dagster instance the CLI records its runs in: the one `dagster dev` and `dg dev` use.

With ``$DAGSTER_HOME`` set, everything uses it. Without it, Dagster's own commands read the
``dagster.yaml`` of the directory they start in; the project's puts runs, schedules and logs in
``./.dagster_home``. The CLI opens that same instance: ``./.dagster_home`` configured by
``./dagster.yaml`` when there is one (Dagster's defaults lay the files out the same way when
there is not).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

from liger_warehouse import settings

DEFAULT_HOME = ".dagster_home"
CONFIG = "dagster.yaml"
# Written into a $DAGSTER_HOME that has no configuration, so that Dagster does not warn about
# it on every command; the settings are Dagster's defaults, with telemetry off as in the project.
MINIMAL_CONFIG = """# Dagster's defaults: runs, schedules and logs in SQLite under this directory.
telemetry:
  enabled: false
"""


def instance_home() -> Path:
    """``$DAGSTER_HOME``, else ``./.dagster_home``."""
    explicit = settings.current().dagster_home
    return Path(explicit).expanduser() if explicit else Path(DEFAULT_HOME).resolve()


@contextmanager
def dagster_instance() -> Iterator[dg.DagsterInstance]:
    """The instance, created when there is none yet."""
    import dagster as dg  # only the commands that run jobs pay for Dagster's import
    from dagster._core.instance.ref import InstanceRef

    home = instance_home()
    home.mkdir(parents=True, exist_ok=True)
    if settings.current().dagster_home:
        if not (home / CONFIG).exists():
            (home / CONFIG).write_text(MINIMAL_CONFIG)
        with dg.DagsterInstance.get() as instance:
            yield instance
        return
    config_dir = Path.cwd() if Path(CONFIG).is_file() else home
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), config_dir=str(config_dir))) as instance:
        yield instance
