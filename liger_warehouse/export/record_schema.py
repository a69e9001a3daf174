"""The JSON Schema of kernelindex.dev/v1alpha1 records (``kernelindex.schema.json`` beside this
module) and the validation every exported and imported record goes through."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator

# Error messages quote the offending instance: capped, so one bad record cannot flood a log.
MESSAGE_LIMIT = 300


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of exported records (``kernelindex.schema.json`` in this package)."""
    text = files(__package__).joinpath("kernelindex.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _fast_validator() -> jsonschema_rs.Draft202012Validator:
    # Compiled (Rust), about a hundred times faster than jsonschema: every exported and imported
    # record is validated. jsonschema stays for the error messages of the records that fail.
    return jsonschema_rs.Draft202012Validator(schema())


@cache
def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(schema())
    return Draft202012Validator(schema())


def validate_record(record: Any) -> list[str]:
    """Schema violations of a record as ``"<json path>: <message>"``; empty when valid."""
    if _fast_validator().is_valid(record):
        return []
    errors = sorted(_validator().iter_errors(record), key=lambda error: error.json_path)
    # Messages quote the offending instance; cap them so one bad record cannot flood a log.
    return [f"{error.json_path}: {error.message}"[:MESSAGE_LIMIT] for error in errors]
