"""PNG renders of the report's charts, re-deflated to a fraction of vl-convert's size.

vl-convert writes PNGs with fast, weak compression; the same pixels deflated at level 9 are
about four times smaller, which matters because the renders are also inlined (base64) into the
Dagster materialization. Lossless: only the compressed stream changes.
"""

from __future__ import annotations

import struct
import zlib

import vl_convert

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG")
    chunks, pos = [], len(SIGNATURE)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        chunks.append((data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]))
        pos += 12 + length
    return chunks


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def compact(data: bytes) -> bytes:
    """The same image with its pixel stream deflated at level 9, in one IDAT chunk."""
    chunks = _chunks(data)
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    out, written = [SIGNATURE], False
    for kind, body in chunks:
        if kind != b"IDAT":
            out.append(_chunk(kind, body))
        elif not written:
            out.append(_chunk(b"IDAT", zlib.compress(pixels, 9)))
            written = True
    return b"".join(out)


def render(spec: dict, vl_version: str, scale: float) -> bytes:
    """A Vega-Lite spec as a compact PNG; bound parameters show their default value."""
    return compact(vl_convert.vegalite_to_png(spec, vl_version=vl_version, scale=scale))
