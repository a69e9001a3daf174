"""The stored tables of the lake: their Arrow schemas (what one row of each means: ``table_docs``).

The ingested star schema and the change points are defined here; every derived table is a select
in sql/derived/, which alone says what it holds.
"""

from __future__ import annotations

import pyarrow as pa

# The version of the identities behind the digests (docs/SCHEMA.md, "Schema versions"); the lake
# records the version its objects were created for (lake/objects.py, ``warehouse_build``).
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
    "fact_run_compare": pa.schema(
        [
            ("base_run", pa.string()),
            ("head_run", pa.string()),
            ("base_commit", pa.string()),
            ("head_commit", pa.string()),
            ("status", pa.string()),
            ("ahead_by", pa.int32()),
            ("behind_by", pa.int32()),
            ("total_commits", pa.int32()),
            ("base_committed_at", TS),
            ("head_committed_at", TS),
            ("merge_base_commit", pa.string()),
            ("merge_base_committed_at", TS),
        ]
    ),
    "fact_compare_commit": pa.schema(
        [
            ("base_run", pa.string()),
            ("head_run", pa.string()),
            ("position", pa.int32()),
            ("sha", pa.string()),
            ("title", pa.string()),
            ("pr_number", pa.int32()),
            ("author", pa.string()),
            ("committed_at", TS),
            ("message", pa.string()),
            ("html_url", pa.string()),
        ]
    ),
    "fact_compare_file": pa.schema(
        [
            ("base_run", pa.string()),
            ("head_run", pa.string()),
            ("filename", pa.string()),
            ("status", pa.string()),
            ("additions", pa.int32()),
            ("deletions", pa.int32()),
            ("changes", pa.int32()),
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
    # decompose_points of a pair of builds (runs), the pair as its two; `decompose` (`run_steps`) rebuilds `pair`
    "triage_event": pa.schema(
        [
            ("event_id", pa.string()),
            ("action", pa.string()),
            ("scope", pa.string()),
            ("target", pa.string()),
            ("first_run", pa.string()),
            ("last_run", pa.string()),
            ("commits", pa.string()),
            ("kind", pa.string()),
            ("threshold", pa.float64()),
            ("note", pa.string()),
            ("author", pa.string()),
            ("recorded_at", TS),
        ]
    ),
}

DIMENSIONS = ("dim_protocol", "dim_workload", "dim_environment", "dim_implementation")
DIGEST_COLUMN = {name: name.removeprefix("dim_") + "_digest" for name in DIMENSIONS}
DIGEST_COLUMN["dim_upstream_revision"] = "revision_digest"
TABLES = tuple(SCHEMAS)
# GitHub's compares of consecutive gh-pages runs, from the raw store (build/compare_rows.py).
COMPARE_TABLES = ("fact_run_compare", "fact_compare_commit", "fact_compare_file")
# Written by the change point detection (analysis/change_points.py).
CHANGE_POINT_TABLES = ("fact_change_point", "change_point_state")
# Written by people, one row per triage command (liger_warehouse/triage/): never by a refresh.
TRIAGE_TABLES = ("triage_event",)
INGESTED = tuple(t for t in SCHEMAS if t not in (*CHANGE_POINT_TABLES, *TRIAGE_TABLES))
# The tables the lake stores as written. The derived tables are not here: each is a select in
# sql/derived/, its schema what the select gives, recreated at each publish (lake/objects.py).
STORED = (*INGESTED, *CHANGE_POINT_TABLES, *TRIAGE_TABLES)


def empty(name: str) -> pa.Table:
    return SCHEMAS[name].empty_table()
