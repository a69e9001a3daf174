"""The warehouse tables: their Arrow schemas (what one row of each means: ``table_docs``).

This module is the single place the star schema is defined; writers, checks and the DuckDB
views all take column names from here.
"""

from __future__ import annotations

import pyarrow as pa

# The version of the identities behind the digests (docs/SCHEMA.md, "Schema versions"). Every
# generation manifest records the version its digests follow; a refresh migrates an older one.
SCHEMA_VERSION = 2

DIGEST = pa.string()
TS = pa.timestamp("us")

PARAM = pa.struct(
    [
        ("name", pa.string()),
        ("type", pa.string()),
        ("value_text", pa.string()),
        ("value_num", pa.float64()),
    ]
)

# decompose_points' columns in its order after its pair (sql/macros/decompose_points.sql)
DECOMPOSED = [
    ("series_digest", DIGEST),
    ("is_liger", pa.bool_()),
    *((key, pa.string()) for key in ("sweep_key", "kernel_key", "host_key", "kernel", "gpu")),
    *(
        column
        for side in ("base", "head")
        for column in (
            *((f"{side}_{q}", pa.float64()) for q in ("p20", "p50", "p80")),
            (f"{side}_runs", pa.int64()),
            (f"{side}_sources", pa.list_(pa.string())),
        )
    ),
    *((log, pa.float64()) for log in ("change_log", "drift_log", "adjusted_log", "kernel_drift_log", "sweep_log")),
    ("sweep_series", pa.int64()),
    *((log, pa.float64()) for log in ("own_log", "sweep_own_log", "residual_log")),
]
# What a refresh resumes a series from (analysis/otava_split.py): a weak change point of a
# complete window of Otava's split (its place and statistic), and a t-test of Otava's final pass
# or merge over the points [left, index) and [index, right), reused while those points stand.
WEAK_CHANGE_POINT = pa.struct([("index", pa.int32()), ("qhat", pa.float64())])
T_TEST = pa.struct(
    [
        *(("left", pa.int32()), ("index", pa.int32()), ("right", pa.int32())),
        *((f"{stat}_{side}", pa.float64()) for stat in ("mean", "std") for side in (1, 2)),
        ("pvalue", pa.float64()),
    ]
)
# A pairing's spread (sql/derived/fact_speedup_spread.sql), which fact_speedup_noise pools; its
# first three columns name the pairing in fact_speedup_step.
SPEEDUP_SPREAD = [
    *((f"{side}_series_digest", DIGEST) for side in ("liger", "baseline")),
    *(("metric", pa.string()), ("history", pa.int64()), ("spread", pa.float64())),
]
SCHEMAS: dict[str, pa.Schema] = {
    "dim_protocol": pa.schema(
        [
            ("protocol_digest", DIGEST),
            ("harness", pa.string()),
            ("timed_pass", pa.string()),
            ("metric", pa.string()),
            ("unit", pa.string()),
            ("statistic", pa.string()),
            ("quantiles", pa.list_(pa.float64())),
        ]
    ),
    "dim_workload": pa.schema(
        [
            ("workload_digest", DIGEST),
            ("kernel", pa.string()),
            ("x_name", pa.string()),
            ("x_label", pa.string()),
            ("x_value", pa.string()),
            ("x_value_num", pa.float64()),
            ("config_json", pa.string()),
            ("params", pa.list_(PARAM)),
            ("slug", pa.string()),
        ]
    ),
    "dim_environment": pa.schema(
        [
            ("environment_digest", DIGEST),
            ("gpu_name", pa.string()),
            ("vendor", pa.string()),
            ("product", pa.string()),
            ("form_factor", pa.string()),
            ("architecture", pa.string()),
            ("in_catalog", pa.bool_()),
        ]
    ),
    "dim_implementation": pa.schema(
        [
            ("implementation_digest", DIGEST),
            ("provider", pa.string()),
            ("liger_version", pa.string()),
            ("backend", pa.string()),
        ]
    ),
    "dim_version": pa.schema(
        [
            ("liger_version", pa.string()),
            ("version_rank", pa.int32()),
            ("major", pa.int32()),
            ("minor", pa.int32()),
            ("patch", pa.int32()),
            ("is_prerelease", pa.bool_()),
        ]
    ),
    "dim_upstream_revision": pa.schema(
        [
            ("revision_digest", DIGEST),
            ("source", pa.string()),
            ("source_key", pa.string()),
            ("path", pa.string()),
            ("run", pa.string()),
            ("commit", pa.string()),
            ("release_version", pa.string()),
            ("seq", pa.int32()),
            ("committed_at", TS),
            ("message", pa.string()),
            ("html_url", pa.string()),
            ("content_digest", DIGEST),
            ("row_count", pa.int32()),
            ("quarantined_count", pa.int32()),
            ("header_text", pa.string()),
            ("header_suffix", pa.string()),
            ("is_head", pa.bool_()),
            ("is_upstream", pa.bool_()),
            ("ingested_at", TS),
        ]
    ),
    "fact_result": pa.schema(
        [
            ("result_digest", DIGEST),
            ("protocol_digest", DIGEST),
            ("workload_digest", DIGEST),
            ("environment_digest", DIGEST),
            ("implementation_digest", DIGEST),
            ("series_digest", DIGEST),
            ("source", pa.string()),
            ("source_key", pa.string()),
            ("metric", pa.string()),
            ("unit", pa.string()),
            ("p20", pa.float64()),
            ("p50", pa.float64()),
            ("p80", pa.float64()),
            ("observed_at", TS),
            ("liger_version", pa.string()),
            ("first_revision_digest", DIGEST),
            ("last_revision_digest", DIGEST),
            ("is_current", pa.bool_()),
            ("row_text", pa.string()),
        ]
    ),
    "fact_revision_member": pa.schema(
        [
            ("revision_digest", DIGEST),
            ("ordinal", pa.int32()),
            ("line_number", pa.int32()),
            ("result_digest", DIGEST),
            ("line_suffix", pa.string()),
        ]
    ),
    "quarantined_row": pa.schema(
        [
            ("revision_digest", DIGEST),
            ("source", pa.string()),
            ("source_key", pa.string()),
            ("path", pa.string()),
            ("commit", pa.string()),
            ("ordinal", pa.int32()),
            ("line_number", pa.int32()),
            ("row_text", pa.string()),
            ("line_suffix", pa.string()),
            ("reason", pa.string()),
        ]
    ),
    "golden_commit": pa.schema(
        [
            ("kernel", pa.string()),
            ("run", pa.string()),
            ("is_default", pa.bool_()),
            ("content_digest", DIGEST),
        ]
    ),
    "fact_change_point": pa.schema(
        [
            ("series_digest", DIGEST),
            ("revision_digest", DIGEST),
            ("previous_revision_digest", DIGEST),
            ("point_index", pa.int32()),
            ("points", pa.int32()),
            ("before_points", pa.int32()),
            ("after_points", pa.int32()),
            ("before_median", pa.float64()),
            ("after_median", pa.float64()),
            ("pvalue", pa.float64()),
            ("method", pa.string()),
        ]
    ),
    "change_point_state": pa.schema(
        [
            ("series_digest", DIGEST),
            ("points", pa.int32()),
            ("last_seq", pa.int32()),
            ("prefix_digest", DIGEST),
            ("resume_index", pa.int32()),
            ("weak_change_points", pa.list_(WEAK_CHANGE_POINT)),
            ("t_tests", pa.list_(T_TEST)),
            ("change_points", pa.list_(pa.struct([("index", pa.int32()), ("pvalue", pa.float64())]))),
            ("method", pa.string()),
        ]
    ),
    "dim_series": pa.schema(
        [
            ("series_digest", DIGEST),
            ("kernel", pa.string()),
            ("mode", pa.string()),
            ("provider", pa.string()),
            ("backend", pa.string()),
            ("metric", pa.string()),
            ("unit", pa.string()),
            ("gpu", pa.string()),
            ("architecture", pa.string()),
            ("workload", pa.string()),
            ("x_name", pa.string()),
            ("x_value", pa.string()),
            ("config_json", pa.string()),
            ("is_liger", pa.bool_()),
            ("sweep_key", pa.string()),
            ("kernel_key", pa.string()),
            ("point_key", pa.string()),
            ("host_key", pa.string()),
        ]
    ),
    "dim_build": pa.schema(
        [
            *(("build_rank", pa.int64()), ("build", pa.string()), ("liger_version", pa.string())),
            *(("version_rank", pa.int32()), ("build_kind", pa.string())),
            *(("first_observed", TS), ("last_observed", TS), ("sources", pa.list_(pa.string()))),
            *(("results", pa.int64()), ("runs", pa.list_(pa.string())), ("last_run_seq", pa.int32())),
        ]
    ),
    "fact_build_source": pa.schema(
        [
            *(("source_key", pa.string()), ("build", pa.string()), ("source_label", pa.string())),
            *(("liger_version", pa.string()), ("build_kind", pa.string())),
            *(("first_run_seq", pa.int32()), ("last_run_seq", pa.int32()), ("first_observed", TS)),
            *(("last_observed", TS), ("results", pa.int64())),
        ]
    ),
    "fact_run_point": pa.schema(
        [
            ("run", pa.string()),
            ("series_digest", DIGEST),
            ("result_digest", DIGEST),
            ("build", pa.string()),
            ("run_seq", pa.int32()),
            ("p20", pa.float64()),
            ("p50", pa.float64()),
            ("p80", pa.float64()),
            ("observed_at", TS),
        ]
    ),
    "fact_recent_point": pa.schema(
        [
            ("run", pa.string()),
            ("series_digest", DIGEST),
            ("p20", pa.float64()),
            ("p50", pa.float64()),
            ("p80", pa.float64()),
            ("runs", pa.int64()),
            ("sources", pa.list_(pa.string())),
            ("observed_at", TS),
        ]
    ),
    "fact_build_point": pa.schema(
        [
            ("build", pa.string()),
            ("series_digest", DIGEST),
            ("p20", pa.float64()),
            ("p50", pa.float64()),
            ("p80", pa.float64()),
            ("runs", pa.int64()),
            ("sources", pa.list_(pa.string())),
            ("observed_at", TS),
        ]
    ),
    # decompose_points of a pair of builds (runs), the pair as its two; `decompose` (`run_steps`) rebuilds `pair`
    "fact_build_step": pa.schema(
        [
            *(("base_build", pa.string()), ("head_build", pa.string()), *DECOMPOSED),
            *(("consecutive", pa.bool_()), ("head_point", pa.int64())),
        ]
    ),
    "fact_run_step": pa.schema([("base_run", pa.string()), ("head_run", pa.string()), *DECOMPOSED]),
    "fact_speedup_pair": pa.schema(
        [
            ("source_key", pa.string()),
            ("liger_result_digest", DIGEST),
            ("baseline_result_digest", DIGEST),
            ("liger_series_digest", DIGEST),
            ("baseline_series_digest", DIGEST),
            ("metric", pa.string()),
            ("unit", pa.string()),
            ("liger_version", pa.string()),
            ("build", pa.string()),
            ("liger_provider", pa.string()),
            ("baseline_provider", pa.string()),
            ("backend", pa.string()),
            *((f"{side}_{q}", pa.float64()) for side in ("liger", "baseline") for q in ("p20", "p50", "p80")),
            ("source", pa.string()),
            ("revision", pa.string()),
            ("liger_observed_at", TS),
            ("baseline_observed_at", TS),
            ("is_current", pa.bool_()),
        ]
    ),
    "fact_restatement": pa.schema(
        [
            *(("source_key", pa.string()), ("result_digest", DIGEST)),
            *((name, DIGEST) for name in ("restated_revision_digest", "replacement_digest")),
            *((f"replacement_{q}", pa.float64()) for q in ("p20", "p50", "p80")),
            *(("replacement_version", pa.string()), ("replacement_observed_at", TS)),
        ]
    ),
    "fact_speedup_point": pa.schema(
        [
            ("build", pa.string()),
            *((f"{side}_series_digest", DIGEST) for side in ("liger", "baseline")),
            *(("metric", pa.string()), ("baseline_provider", pa.string())),
            *((name, pa.float64()) for name in ("speedup", "liger_p50", "baseline_p50")),
            *(("runs", pa.int64()), ("sources", pa.list_(pa.string()))),
        ]
    ),
    "fact_series_spread": pa.schema(
        [
            *(("series_digest", DIGEST), ("metric", pa.string()), ("is_liger", pa.bool_()), ("sweep_key", pa.string())),
            *(("history", pa.int64()), ("alone", pa.bool_()), ("residual_spread", pa.float64())),
            *(("sweep_history", pa.int64()), ("sweep_spread", pa.float64())),
        ]
    ),
    "fact_series_noise": pa.schema(
        [
            *(("series_digest", DIGEST), ("history", pa.int64())),
            *((name, pa.float64()) for name in ("residual_noise", "sweep_noise", "residual_spread", "sweep_spread")),
            ("sweep_history", pa.int64()),
            *(("residual_pool", pa.float64()), ("sweep_pool", pa.float64()), ("pooled", pa.bool_())),
            *(("noise", pa.float64()), ("detectable_change", pa.float64())),
        ]
    ),
    "fact_speedup_step": pa.schema(
        [
            *(("head_run", pa.string()), *SPEEDUP_SPREAD[:3], ("base_run", pa.string())),
            *(("log_speedup", pa.float64()), ("step", pa.float64())),
        ]
    ),
    "fact_speedup_spread": pa.schema([*SPEEDUP_SPREAD, ("last_run", pa.string())]),
    "series_latest_runs": pa.schema([("series_digest", DIGEST), ("runs", pa.list_(pa.string()))]),
    "fact_speedup_noise": pa.schema([*SPEEDUP_SPREAD, ("pool", pa.float64()), ("noise", pa.float64())]),
    "digest_migration": pa.schema(
        [
            ("kind", pa.string()),
            ("old_digest", DIGEST),
            ("new_digest", DIGEST),
            ("schema_version", pa.int32()),
        ]
    ),
}

DIMENSIONS = ("dim_protocol", "dim_workload", "dim_environment", "dim_implementation")
DIGEST_COLUMN = {name: name.removeprefix("dim_") + "_digest" for name in DIMENSIONS}
DIGEST_COLUMN["dim_upstream_revision"] = "revision_digest"
TABLES = tuple(SCHEMAS)
# Derived tables written by the SQL models in sql/derived/, in build order: each may read those before.
SQL_MODELS = (
    *("dim_series", "fact_build_source", "dim_build", "fact_run_point", "series_latest_runs", "fact_recent_point"),
    *("fact_build_point", "fact_build_step"),
    *("fact_speedup_pair", "fact_speedup_point", "fact_run_step", "fact_series_spread", "fact_series_noise"),
    *("fact_speedup_step", "fact_speedup_spread", "fact_speedup_noise", "fact_restatement"),
)
# Written by the change point detection (analysis/change_points.py).
CHANGE_POINT_TABLES = ("fact_change_point", "change_point_state")
# Derived by later assets from a staged generation, never by ingest: none is published from older facts.
DERIVED = (*CHANGE_POINT_TABLES, *SQL_MODELS)
INGESTED = tuple(t for t in SCHEMAS if t not in DERIVED)
# The tables the lake stores as written, not recreated from sql/derived/ at each publish.
STORED = (*INGESTED, *CHANGE_POINT_TABLES)


def empty(name: str) -> pa.Table:
    return SCHEMAS[name].empty_table()
