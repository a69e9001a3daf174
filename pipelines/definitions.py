"""The code location: every definition under ``defs/``, one folder per concern."""

from pathlib import Path

import dagster as dg


def load() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


@dg.definitions
def defs() -> dg.Definitions:
    return load()
