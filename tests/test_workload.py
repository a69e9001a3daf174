"""Workload parameters and slugs."""

from __future__ import annotations

import csv
import gzip
import json
import re
from collections import defaultdict
from functools import cache

import pytest

from liger_warehouse.model.workload import (
    DTYPE_BY_ABBREVIATION,
    decode_workload_slug,
    parse_config,
    workload_params,
    workload_slug,
)
from tests.conftest import MIRROR

SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
REFERENCE_CONFIG = {"B": 32, "T": 512, "D": 768, "dtype": "torch.float32"}


@cache
def _mirror_workloads() -> frozenset[tuple[str, str, str, str]]:
    """Distinct (kernel_name, x_name, x_value, extra_benchmark_config_str) in the mirror."""
    found = set()
    for path in sorted(MIRROR.glob("**/*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            for row in csv.DictReader(handle):
                if row["kernel_name"]:
                    found.add(
                        (
                            row["kernel_name"],
                            row["x_name"],
                            row["x_value"],
                            row["extra_benchmark_config_str"],
                        )
                    )
    return frozenset(found)


def test_reference_slug() -> None:
    assert workload_slug("V", "131072", REFERENCE_CONFIG) == ("batch32-hidden768-seq512-vocab131072-fp32")


def test_reference_params_are_typed_and_in_slug_order() -> None:
    params = workload_params("V", "131072", REFERENCE_CONFIG)
    assert [(p.name, p.long_name, p.type, p.value, p.source) for p in params] == [
        ("B", "batch", "int", 32, "config"),
        ("D", "hidden", "int", 768, "config"),
        ("T", "seq", "int", 512, "config"),
        ("V", "vocab", "int", 131072, "x"),
        ("dtype", "dtype", "str", "torch.float32", "config"),
    ]
    assert params[3].value_text == "131072" and params[3].value_num == 131072.0
    assert params[4].value_num is None


def test_parse_config() -> None:
    assert parse_config('{"B": 32, "dtype": "torch.float32"}') == {"B": 32, "dtype": "torch.float32"}
    assert parse_config("") == {}
    assert parse_config("   ") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"B": 32', "invalid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ("42", "expected a JSON object, got int"),
        ('"text"', "expected a JSON object, got str"),
        ("null", "expected a JSON object, got NoneType"),
        ('{"B": 1, "B": 2}', "duplicate keys"),
    ],
)
def test_parse_config_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_config(text)


def test_value_types() -> None:
    config = {"a": 1, "b": 1.5, "c": True, "d": "x", "e": None, "f": [1, 2], "g": {"h": 1}}
    types = {p.name: p.type for p in workload_params(None, None, config)}
    assert types == {
        "a": "int",
        "b": "float",
        "c": "bool",
        "d": "str",
        "e": "null",
        "f": "json",
        "g": "json",
    }
    texts = {p.name: p.value_text for p in workload_params(None, None, config)}
    assert texts["c"] == "true" and texts["e"] is None and texts["g"] == '{"h":1}'


@pytest.mark.parametrize(
    ("x_value", "kind", "value"),
    [("131072", "int", 131072), ("0.5", "float", 0.5), ("llama_2_7b", "str", "llama_2_7b")],
)
def test_x_value_types(x_value: str, kind: str, value: object) -> None:
    (param,) = workload_params("X", x_value, {})
    assert (param.type, param.value, param.source, param.value_text) == (kind, value, "x", x_value)


def test_non_numeric_x_value() -> None:
    config = {"bsz": 1, "seq_len": 2048}
    assert workload_slug("model_config", "llama_2_7b", config) == "batch1-modelllama27b-seq2048"
    assert workload_slug("model_config", "qwen2.5_7b", config) == "batch1-modelqwen257b-seq2048"


def test_tokens_for_signs_floats_and_booleans() -> None:
    config = {"ignore_index": -100, "eps": 1e-06, "beta": 0.1, "bias": True, "mode": "forward"}
    assert workload_slug("B", "8", config) == "batch8-beta0p1-bias-eps1em06-ignoreindexm100-modeforward"
    assert workload_slug("H", "4", {"beta": False}) == "hidden4-nobeta"


def test_x_value_replaces_a_null_config_entry() -> None:
    # fused_moe writes the swept key as null in its config.
    config = {"sweep_dim": "E", "T": 8192, "E": None, "H": 2048, "K": 8, "dtype": "torch.bfloat16"}
    assert workload_slug("E", "64", config) == "experts64-hidden2048-k8-seq8192-sweepdime-bf16"


def test_long_name_collisions_keep_both_values() -> None:
    config = {"hidden_size": 4096, "bsz": 1, "seq_len": 8192, "dtype": "torch.bfloat16"}
    # The x axis T (1024) wins "seq"; seq_len keeps its own compacted name.
    assert workload_slug("T", "1024", config) == "batch1-hidden4096-seq1024-seqlen8192-bf16"
    group_norm = {"hidden_size": 4096, "H": 512, "bsz": 1, "seq_len": 8192}
    assert workload_slug("BT", "1024", group_norm) == ("batch1-hidden512-hiddensize4096-seq8192-tokens1024")


def test_slug_ignores_config_key_order() -> None:
    a = {"B": 2, "C_in": 4, "dtype": "torch.bfloat16"}
    b = {"dtype": "torch.bfloat16", "C_in": 4, "B": 2}
    assert workload_slug("L", "64", a) == workload_slug("L", "64", b) == "batch2-cin4-seq64-bf16"


@pytest.mark.parametrize(
    ("dtype", "token"),
    [
        ("torch.float32", "fp32"),
        ("torch.bfloat16", "bf16"),
        ("torch.float16", "fp16"),
        ("float16", "fp16"),
        ("torch.float8_e4m3fn", "fp8e4m3fn"),
    ],
)
def test_dtype_abbreviation_comes_last(dtype: str, token: str) -> None:
    assert workload_slug("V", "8", {"dtype": dtype, "z": 1}) == f"vocab8-z1-{token}"


def test_unknown_dtype_is_an_ordinary_token() -> None:
    assert workload_slug("V", "8", {"dtype": "torch.complex64"}) == "dtypetorchcomplex64-vocab8"


def test_empty_workload() -> None:
    assert workload_slug(None, None, {}) == "default"
    assert workload_slug("", "", {}) == "default"
    assert decode_workload_slug("default") == {}


def test_nested_values() -> None:
    assert workload_slug(None, None, {"shape": [4096, 128]}) == "shape4096x128"
    slug = workload_slug(None, None, {"model_configs": {"llama": {"vocab_size": 32000}}})
    assert re.fullmatch(r"modelconfigsj[0-9a-f]{8}", slug)


def test_decode_reference_slug() -> None:
    assert decode_workload_slug("batch32-hidden768-seq512-vocab131072-fp32") == {
        "batch": 32,
        "hidden": 768,
        "seq": 512,
        "vocab": 131072,
        "dtype": "torch.float32",
    }
    assert set(DTYPE_BY_ABBREVIATION) >= {"fp32", "bf16", "fp16"}


def test_decode_keeps_collisions_and_flags() -> None:
    slug = "batch1-hidden512-hiddensize4096-nobias-seq1024-seqlen8192-bf16"
    config = decode_workload_slug(slug)
    assert config["hiddensize"] == 4096 and config["bias"] is False
    assert workload_slug(None, None, config) == slug


def test_every_mirror_row_gets_a_slug_that_decodes_back() -> None:
    workloads = _mirror_workloads()
    assert len(workloads) > 300
    for _kernel, x_name, x_value, config_text in workloads:
        slug = workload_slug(x_name, x_value, parse_config(config_text))
        assert SLUG.fullmatch(slug), slug
        assert workload_slug(None, None, decode_workload_slug(slug)) == slug


def test_equal_slugs_mean_equal_parameter_values() -> None:
    values_by_slug: dict[tuple[str, str], set[frozenset]] = defaultdict(set)
    for kernel, x_name, x_value, config_text in _mirror_workloads():
        params = workload_params(x_name, x_value, parse_config(config_text))
        slug = "-".join(p.token for p in params)
        values_by_slug[(kernel, slug)].add(frozenset((p.long_name, json.dumps(p.value)) for p in params))
    assert [key for key, values in values_by_slug.items() if len(values) > 1] == []
