"""``liger-warehouse``: one module per group of commands, all on one Typer app."""

import gc

from liger_warehouse.cli import export, query, report, status, triage, warehouse  # noqa: F401  (modules register their commands)
from liger_warehouse.cli.app import app, options

__all__ = ["app", "main"]


def main() -> None:
    """The ``liger-warehouse`` command."""
    # The interpreter's exit runs a full garbage collection over every object still alive: about
    # 0.08 s after a reading command's imports, more than a second after Dagster's. What the
    # imports made, what a job run loads (run_job) and what is alive at the end is frozen: the
    # collector skips it. Cyclic garbage among it is then freed only when the process ends, and
    # no command relies on a collected object's finalizer (docs/PERFORMANCE.md, start-up).
    gc.freeze()
    options.owns_process = True
    try:
        app(prog_name="liger-warehouse")
    finally:
        gc.freeze()
