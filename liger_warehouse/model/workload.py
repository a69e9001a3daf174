"""Workload parameters of an upstream row: the x axis plus ``extra_benchmark_config_str``.

Every row's workload becomes typed parameters and a slug such as
``batch32-hidden768-seq512-vocab131072-fp32``. The rules (documented in
``docs/KERNELINDEX.md``, section "Workload slug") are:

* Parameters are the config object's entries plus the x axis (``x_name`` = ``x_value``). The x
  value replaces a config entry of the same key (``fused_moe`` writes ``"E": null`` when it
  sweeps ``E``), because the x value is what was actually run.
* Each key is compacted (lower case, ``[a-z0-9]`` only) and looked up in ``LONG_NAMES``
  (``B``/``bsz`` -> ``batch``, ``T``/``seq_len`` -> ``seq``, ``D``/``H``/``hidden_size`` ->
  ``hidden``, ``V`` -> ``vocab``, ...). Unknown keys keep their compacted form.
* When two keys share a long name (``T`` on the x axis and ``seq_len`` in the config), the
  one literally named the long name wins, then the x axis, then the first by compacted key;
  the others keep their compacted key so no two workloads collapse onto one slug.
* A token is ``<name><value>``: integers as digits, floats as ``repr`` with ``.`` -> ``p``,
  minus signs -> ``m`` (``eps1em06``, ``dimm1``); ``true`` -> ``<name>``, ``false`` ->
  ``no<name>``; strings compacted; null -> ``<name>null``; a list of scalars joined by ``x``;
  other nested JSON ``j`` + 8 hex of its SHA-256.
* A ``dtype`` naming a known torch dtype becomes its abbreviation (``torch.float32`` ->
  ``fp32``) and always comes last; every other token is sorted by its text.
* No parameters at all gives ``default``.

Slugs use only ``[a-z0-9-]`` and ``decode_workload_slug`` reads one back into a config whose
slug is the same text (the x/config split and exact key spellings are not recoverable).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

ParamType = Literal["int", "float", "bool", "str", "null", "json"]
Source = Literal["x", "config"]
RawParam = tuple[str, Any, Source]

_ALIASES: dict[str, tuple[str, ...]] = {
    "batch": ("b", "bsz", "batchsize"),
    "seq": ("t", "s", "l", "seqlen", "seqlength", "sequencelength"),
    "hidden": ("d", "h", "n", "hiddensize", "hiddendim", "dmodel"),
    "vocab": ("v", "vocabsize"),
    "tokens": ("bt", "numtokens"),
    "rows": ("m",),
    "channels": ("c", "numchannels"),
    "experts": ("e", "numexperts"),
    "intermediate": ("intermediatesize", "intermediatedim"),
    "heads": ("numheads", "numattentionheads"),
    "qheads": ("numqheads",),
    "kvheads": ("numkvheads", "numkeyvalueheads"),
    "shards": ("numshards",),
    "kernel": ("kernelsize",),
    "act": ("hiddenact", "activation"),
    "model": ("modelconfig", "modelname"),
    "level": ("importancesamplinglevel",),
    "dtype": ("torchdtype",),
}
# Compacted key -> long name; every long name also maps to itself so decoded slugs re-encode.
LONG_NAMES: Mapping[str, str] = MappingProxyType(
    {alias: long for long, aliases in _ALIASES.items() for alias in (long, *aliases)}
)

_DTYPES: dict[str, tuple[str, ...]] = {
    "fp32": ("float32", "float", "fp32"),
    "fp16": ("float16", "half", "fp16"),
    "bf16": ("bfloat16", "bf16"),
    "fp64": ("float64", "double", "fp64"),
    "fp8e4m3fn": ("float8_e4m3fn",),
    "fp8e4m3fnuz": ("float8_e4m3fnuz",),
    "fp8e5m2": ("float8_e5m2",),
    "fp8e5m2fnuz": ("float8_e5m2fnuz",),
    "int8": ("int8",),
    "uint8": ("uint8",),
    "int16": ("int16", "short"),
    "int32": ("int32", "int"),
    "int64": ("int64", "long"),
}
# dtype value (without "torch.") -> abbreviation, and abbreviation -> canonical torch name.
DTYPE_ABBREVIATIONS: Mapping[str, str] = MappingProxyType(
    {name: abbr for abbr, names in _DTYPES.items() for name in names}
)
DTYPE_BY_ABBREVIATION: Mapping[str, str] = MappingProxyType(
    {abbr: f"torch.{names[0]}" for abbr, names in _DTYPES.items()}
)

EMPTY_SLUG = "default"
_SCALARS = ("int", "float", "str")
_NON_ALNUM = re.compile(r"[^a-z0-9]")
_INT_TEXT = re.compile(r"[+-]?\d+")
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_INT_TOKEN = re.compile(r"([a-z][a-z0-9]*?)(m?\d+)")
_FLOAT_TOKEN = re.compile(r"([a-z][a-z0-9]*?)(m?(?:\d+p\d+(?:em?\d+)?|\d+em?\d+|nan|inf))")


@dataclass(frozen=True)
class Param:
    """One workload parameter. ``name`` is the key as written upstream."""

    name: str
    long_name: str
    type: ParamType
    value: Any
    value_text: str | None
    value_num: float | None
    source: Source
    token: str


def parse_config(text: str | None) -> dict[str, Any]:
    """The ``extra_benchmark_config_str`` object; blank text means no config.

    Upstream writes an empty field when a benchmark has no extra config, so that is ``{}``.
    Raises ``ValueError`` for invalid JSON, duplicate keys, or JSON that is not an object.
    """
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at character {exc.pos}"
        raise ValueError(f"invalid JSON ({problem}): {text[:60]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}: {text[:60]!r}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        # json.loads would silently keep the last value; a row like that is not trustworthy.
        raise ValueError(f"duplicate keys in JSON object: {duplicates}")
    return dict(pairs)


def compact(text: str) -> str:
    """Lower case with everything outside ``[a-z0-9]`` dropped: ``"seq_len"`` -> ``"seqlen"``."""
    return _NON_ALNUM.sub("", text.lower())


def long_name(key: str) -> str:
    """The slug name of a key: its long name if aliased, else its compacted form."""
    short = compact(key)
    return LONG_NAMES.get(short, short or "param")


def x_param_value(text: str | None) -> Any:
    """The typed value of an x value written as text: int, float, else the text; blank -> None."""
    if text is None or not text.strip():
        return None
    stripped = text.strip()
    if _INT_TEXT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT_TEXT.fullmatch(stripped):
        return float(stripped)
    return text


def _x_key(x_name: str | None, x_value_text: str | None) -> str | None:
    """The key of the x parameter, or None when the row has no x axis at all."""
    if x_name:
        return x_name
    # A row with an x value but no x name still has that value; "x" names it.
    return "x" if x_value_text is not None and x_value_text.strip() else None


def _raw_params(x_key: str | None, x_value_text: str | None, config: Mapping[str, Any]) -> list[RawParam]:
    params: list[RawParam] = [(key, value, "config") for key, value in config.items() if key != x_key]
    if x_key is not None:
        params.append((x_key, x_param_value(x_value_text), "x"))
    return params


def _resolve_names(params: list[RawParam], x_key: str | None) -> dict[str, str]:
    groups: dict[str, list[str]] = defaultdict(list)
    for key, _, _ in params:
        groups[long_name(key)].append(key)
    names: dict[str, str] = {}
    for long, keys in groups.items():
        winner = min(keys, key=lambda k: (compact(k) != long, k != x_key, compact(k), k))
        for key in keys:
            names[key] = long if key == winner else (compact(key) or "param")
    return names


def param_type(value: Any) -> ParamType:
    """The parameter type of a JSON value (bool is checked before int: it is an int subclass)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "json"


def _signed(text: str) -> str:
    return text.lower().replace("-", "m").replace("+", "").replace(".", "p")


def _hash8(value: Any) -> str:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


def value_token(value: Any) -> str:
    """The value part of a token (booleans are handled by ``param_token``)."""
    kind = param_type(value)
    if kind == "null":
        return "null"
    if kind in ("int", "float"):
        return _signed(repr(value))
    if kind == "str":
        return compact(value) or ("empty" if value == "" else "h" + _hash8(value))
    if isinstance(value, list) and value and all(param_type(v) in _SCALARS for v in value):
        return "x".join(value_token(v) for v in value)
    return "j" + _hash8(value)


def dtype_abbreviation(value: Any) -> str | None:
    """``"torch.bfloat16"`` -> ``"bf16"``; None for anything that is not a known dtype name."""
    if not isinstance(value, str):
        return None
    return DTYPE_ABBREVIATIONS.get(value.strip().lower().removeprefix("torch."))


def param_token(name: str, value: Any) -> str:
    """The slug token of one parameter whose slug name is already resolved."""
    if name == "dtype" and dtype_abbreviation(value) is not None:
        return dtype_abbreviation(value)
    if isinstance(value, bool):
        return name if value else "no" + name
    return name + value_token(value)


def _value_text(value: Any, source: Source, x_value_text: str | None) -> str | None:
    if source == "x":
        return x_value_text if x_value_text is not None and x_value_text.strip() else None
    kind = param_type(value)
    if kind == "null":
        return None
    if kind == "bool":
        return "true" if value else "false"
    if kind in ("str", "int", "float"):
        return value if kind == "str" else repr(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _value_num(value: Any) -> float | None:
    if param_type(value) not in ("int", "float"):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _is_dtype_token(param: Param) -> bool:
    return param.long_name == "dtype" and dtype_abbreviation(param.value) is not None


def _order(param: Param) -> tuple[bool, str, str]:
    return (_is_dtype_token(param), param.token, param.name)


def workload_params(x_name: str | None, x_value_text: str | None, config: Mapping[str, Any]) -> list[Param]:
    """Typed parameters of a workload, in slug order (sorted tokens, a known dtype last)."""
    x_key = _x_key(x_name, x_value_text)
    raw = _raw_params(x_key, x_value_text, config)
    names = _resolve_names(raw, x_key)
    params = []
    for key, value, source in raw:
        name = names[key]
        params.append(
            Param(
                name=key,
                long_name=name,
                type=param_type(value),
                value=value,
                value_text=_value_text(value, source, x_value_text),
                value_num=_value_num(value),
                source=source,
                token=param_token(name, value),
            )
        )
    return sorted(params, key=_order)


def workload_slug(x_name: str | None, x_value_text: str | None, config: Mapping[str, Any]) -> str:
    """The lower-case slug of a workload, e.g. ``batch32-hidden768-seq512-vocab131072-fp32``."""
    tokens = [param.token for param in workload_params(x_name, x_value_text, config)]
    return "-".join(tokens) or EMPTY_SLUG


def _token_candidates(token: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if match := _INT_TOKEN.fullmatch(token):
        found.append((match[1], int(match[2].replace("m", "-"))))
    if match := _FLOAT_TOKEN.fullmatch(token):
        found.append((match[1], float(match[2].replace("m", "-").replace("p", "."))))
    if token.endswith("null") and len(token) > len("null"):
        found.append((token.removesuffix("null"), None))
    if token.startswith("no") and len(token) > len("no"):
        found.append((token.removeprefix("no"), False))
    found.append((token, True))
    return found


def _reads_back(name: str, value: Any, token: str) -> bool:
    if param_token(long_name(name), value) == token:
        return True
    # A key that lost a long-name collision is written under its compacted key.
    short = compact(name)
    return long_name(short) != short and param_token(short, value) == token


def _decode_token(token: str) -> tuple[str, Any]:
    # The first reading that writes back to the same token.
    for name, value in _token_candidates(token):
        if _reads_back(name, value, token):
            return name, value
    return token, True


def _decode(tokens: list[str], dtype_last: bool, bare: bool) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for index, token in enumerate(tokens):
        if dtype_last and index == len(tokens) - 1 and token in DTYPE_BY_ABBREVIATION:
            config["dtype"] = DTYPE_BY_ABBREVIATION[token]
            continue
        name, value = (token, True) if bare else _decode_token(token)
        config[name] = value
    return config


def decode_workload_slug(slug: str) -> dict[str, Any]:
    """A config (keyed by slug names) whose ``workload_slug`` is exactly ``slug``.

    Used to read exported records back: the slug keeps long names and values, not the
    original keys or which parameter was the x axis. Readings are tried from the most
    meaningful (``batch32`` -> ``{"batch": 32}``) to opaque flags (``{"batch32": True}``);
    raises ``ValueError`` if none writes back the same slug.
    """
    if slug == EMPTY_SLUG:
        return {}
    tokens = slug.split("-")
    for bare in (False, True):
        for dtype_last in (True, False):
            config = _decode(tokens, dtype_last, bare)
            if workload_slug(None, None, config) == slug:
                return config
    raise ValueError(f"not a workload slug that round-trips: {slug!r}")
