"""The code location: every definition under ``defs/``, one folder per concern."""

import importlib
import warnings
from pathlib import Path

import dagster as dg


def load() -> dg.Definitions:
    # From the defs module itself, not from the [tool.dg] of pyproject.toml (which is what
    # dg.load_from_defs_folder reads): an installed wheel has no pyproject.toml. Like
    # load_from_defs_folder, this keeps quiet about the loader being a Dagster preview.
    tree = dg.ComponentTree.from_module(
        defs_module=importlib.import_module("pipelines.defs"), project_root=Path(__file__).resolve().parent.parent
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return tree.build_defs()


@dg.definitions
def defs() -> dg.Definitions:
    return load()
