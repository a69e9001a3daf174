"""The warehouse tables: their Arrow schemas and what one row of each means.

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
            (
                "weak_change_points",
                pa.list_(
                    pa.struct(
                        [
                            ("index", pa.int32()),
                            ("qhat", pa.float64()),
                            ("left", pa.int32()),
                            ("right", pa.int32()),
                            ("mean_1", pa.float64()),
                            ("mean_2", pa.float64()),
                            ("std_1", pa.float64()),
                            ("std_2", pa.float64()),
                            ("pvalue", pa.float64()),
                        ]
                    )
                ),
            ),
            (
                "change_points",
                pa.list_(pa.struct([("index", pa.int32()), ("pvalue", pa.float64())])),
            ),
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
            ("build_rank", pa.int64()),
            ("build", pa.string()),
            ("liger_version", pa.string()),
            ("version_rank", pa.int32()),
            ("build_kind", pa.string()),
            ("first_observed", TS),
            ("last_observed", TS),
            ("sources", pa.list_(pa.string())),
            ("results", pa.int64()),
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
    "fact_series_noise": pa.schema(
        [
            ("series_digest", DIGEST),
            ("history", pa.int64()),
            ("residual_noise", pa.float64()),
            ("sweep_noise", pa.float64()),
            ("residual_spread", pa.float64()),
            ("sweep_spread", pa.float64()),
            ("sweep_history", pa.int64()),
            ("residual_pool", pa.float64()),
            ("sweep_pool", pa.float64()),
            ("pooled", pa.bool_()),
            ("noise", pa.float64()),
            ("detectable_change", pa.float64()),
        ]
    ),
    "fact_speedup_noise": pa.schema(
        [
            ("liger_series_digest", DIGEST),
            ("baseline_series_digest", DIGEST),
            ("metric", pa.string()),
            ("history", pa.int64()),
            ("spread", pa.float64()),
            ("pool", pa.float64()),
            ("noise", pa.float64()),
        ]
    ),
    "digest_migration": pa.schema(
        [
            ("kind", pa.string()),
            ("old_digest", DIGEST),
            ("new_digest", DIGEST),
            ("schema_version", pa.int32()),
        ]
    ),
}

DESCRIPTIONS = {
    "dim_protocol": "How a number was measured: harness (the benchmark suite, one per upstream file), timed "
    "pass (forward/backward/full), metric, unit, statistic and quantiles. One row per distinct protocol.",
    "dim_workload": "What was run: kernel, x axis name/label/value and the parsed benchmark config, "
    "as typed params, canonical JSON and a readable slug. One row per distinct workload.",
    "dim_environment": "Where it ran: the raw gpu_name plus vendor, product, form factor and "
    "architecture from the GPU catalog (nulls for GPUs the catalog does not know).",
    "dim_implementation": "Whose kernel: provider, Liger version and Liger backend (triton, cutedsl, cutile; "
    "null for a baseline such as torch).",
    "dim_version": "Every Liger version seen, with its semantic rank (1 = oldest).",
    "dim_upstream_revision": "One row per upstream revision ingested: a main-branch commit of a CSV "
    "path or a gh-pages run, with its content digest, row counts and whether upstream still lists it.",
    "fact_result": "One row per result ever published: one distinct row text within one source "
    "(a main-branch path or a gh-pages run), with its four dimension digests, p20/p50/p80, the "
    "first and last revision that showed it and whether upstream shows it today.",
    "fact_revision_member": "Which results each revision held, at which line, with the exact text "
    "between records, so every upstream file can be rebuilt byte for byte.",
    "quarantined_row": "Upstream rows that failed validation, with the reason, revision and line.",
    "golden_commit": "The reference gh-pages run per kernel, as upstream's golden_commits.json keeps it.",
    "fact_change_point": "Change points in each series' gh-pages run history (Apache Otava e-divisive): "
    "the run where the level shifted, with the medians before and after. Derived from the "
    "staged generation by the fact_change_point asset, not ingested.",
    "change_point_state": "Where the change point detection of each series stands, so the next "
    "refresh resumes it instead of starting over: the points analyzed, a digest of them, where "
    "Otava's sliding windows resume and the weak change points of the windows already complete. "
    "Derived with fact_change_point, not ingested.",
    "dim_series": "One row per series (kernel, pass, provider, backend, metric, GPU and workload) in "
    "readable columns, with the sweep, kernel and host keys verdicts group it by. Derived at publish "
    "by sql/derived/dim_series.sql.",
    "dim_build": "One row per Liger build results stand for, in release order: each release (its "
    "release run and other runs of its commit, else its main-branch rows) and each nightly run, "
    "labelled <version>+<yyyymmdd>.<sha>. Derived at publish by sql/derived/dim_build.sql.",
    "fact_run_point": "One row per series and gh-pages run: the result that stands for the series "
    "in the run. Derived at publish by sql/derived/fact_run_point.sql.",
    "fact_recent_point": "One row per series and gh-pages run: the series' recent level there, the "
    "median over that run and the runs before it that hold the series (verdict_rule().recent_runs at "
    "most), which compare_runs also judges a head against. Derived at publish by "
    "sql/derived/fact_recent_point.sql; docs/VERDICTS.md.",
    "fact_build_point": "One row per series and build: the median of the points the build stands on, "
    "how many and which. Derived at publish by sql/derived/fact_build_point.sql.",
    "fact_series_noise": "One row per series: its run-to-run noise (against its sweep, and its "
    "sweep's shifts), read from its gh-pages run history, and the smallest change a verdict can see "
    "in it. Derived at publish by sql/derived/fact_series_noise.sql; docs/VERDICTS.md.",
    "fact_speedup_noise": "One row per pairing of a Liger series with a baseline series: how much the "
    "speedup of one over the other moves from one gh-pages run to the next, which decides when a "
    "speedup is a tie. Derived at publish by sql/derived/fact_speedup_noise.sql; docs/VERDICTS.md.",
    "digest_migration": "Where a digest went when a schema version changed the identities behind it: "
    "kind (protocol, implementation, series, ...), the old digest, the new one and the schema version "
    "of the new one. A digest split by the new identities has several rows. Written by the refresh that "
    "migrates, carried over afterwards.",
}

DIMENSIONS = ("dim_protocol", "dim_workload", "dim_environment", "dim_implementation")
DIGEST_COLUMN = {name: name.removeprefix("dim_") + "_digest" for name in DIMENSIONS}
DIGEST_COLUMN["dim_upstream_revision"] = "revision_digest"
TABLES = tuple(SCHEMAS)
# Derived tables written by the SQL models in sql/derived/, in the order they are built: each
# may read the ones before it.
SQL_MODELS = (
    "dim_series",
    "dim_build",
    "fact_run_point",
    "fact_recent_point",
    "fact_build_point",
    "fact_series_noise",
    "fact_speedup_noise",
)
# Written by the change point detection (analysis/change_points.py).
CHANGE_POINT_TABLES = ("fact_change_point", "change_point_state")
# Derived tables are computed from a staged generation by later assets; ingest never writes
# or carries them over, so a generation never publishes one computed from older facts.
DERIVED = (*CHANGE_POINT_TABLES, *SQL_MODELS)
INGESTED = tuple(t for t in SCHEMAS if t not in DERIVED)


def empty(name: str) -> pa.Table:
    return SCHEMAS[name].empty_table()
