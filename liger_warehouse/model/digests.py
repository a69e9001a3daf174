"""Entity digests: ``sha256:`` + hex SHA-256 of the RFC 8785 canonical JSON of an identity.

The identity fields of every entity are listed in ``docs/SCHEMA.md``; changing them changes
every digest, so they are pinned by tests.
"""

from __future__ import annotations

import hashlib
from json.encoder import encode_basestring
from typing import Any

import rfc8785

PREFIX = "sha256:"


def canonical_json(identity: Any) -> str:
    """RFC 8785 (JCS) serialization, as text."""
    return rfc8785.dumps(identity).decode("utf-8")


def digest(identity: Any) -> str:
    """The digest of an entity identity (a JSON-compatible value)."""
    return PREFIX + hashlib.sha256(rfc8785.dumps(identity)).hexdigest()


def content_digest(data: bytes) -> str:
    """The digest of raw bytes, used to address raw snapshots."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def hex_part(value: str) -> str:
    """The hex part of a ``sha256:`` digest, for file names."""
    return value.removeprefix(PREFIX)


def flat_digest(identity: dict[str, str | None]) -> str:
    """``digest`` for a flat object of ASCII keys and string or null values, without the generic
    encoder.

    Result digests are computed once per upstream row, so this path matters for throughput.
    For such objects ``json.dumps(..., ensure_ascii=False)`` is exactly the RFC 8785 form (a
    test pins the equality).
    """
    # encode_basestring is the C encoder json.dumps(..., ensure_ascii=False) applies to a str;
    # calling it directly skips building a JSONEncoder per value.
    body = ",".join(f'"{key}":{_flat_value(identity[key])}' for key in sorted(identity))
    return PREFIX + hashlib.sha256(("{" + body + "}").encode("utf-8")).hexdigest()


def _flat_value(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)
