"""What the columns of the most-read tables mean, shown beside each column in the Dagster UI.

Keyed by table, then column; a column without an entry is shown without a description.
"""

from __future__ import annotations

COLUMN_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "fact_result": {
        "result_digest": "Identity of the result: its source, source key and exact row text.",
        "protocol_digest": "-> dim_protocol: harness, timed pass, metric, unit and quantiles.",
        "workload_digest": "-> dim_workload: kernel, x value and benchmark configuration.",
        "environment_digest": "-> dim_environment: the GPU it ran on.",
        "implementation_digest": "-> dim_implementation: provider, Liger version and backend.",
        "series_digest": "The series: same protocol, workload, GPU, provider and backend across versions.",
        "source": "main (a main-branch CSV) or gh-pages (a benchmark run).",
        "source_key": "The CSV path on main, or the gh-pages run name.",
        "metric": "What was measured, e.g. speed or memory.",
        "unit": "Unit of p20/p50/p80, e.g. ms or MB.",
        "p20": "20th percentile of the measurement.",
        "p50": "Median of the measurement.",
        "p80": "80th percentile of the measurement.",
        "observed_at": "When the benchmark ran (the row's timestamp, UTC).",
        "liger_version": "The Liger version benchmarked, as upstream wrote it.",
        "first_revision_digest": "-> dim_upstream_revision: the oldest revision that showed this row.",
        "last_revision_digest": "-> dim_upstream_revision: the newest revision that showed this row.",
        "is_current": "True when the newest revision of its source that upstream still lists shows it.",
        "row_text": "The upstream CSV row, byte for byte.",
    },
    "digest_migration": {
        "kind": "Which digest: protocol, implementation, series, ... (the fact_result column without _digest).",
        "old_digest": "A digest of the schema version before.",
        "new_digest": "A digest it became; several rows per old digest when it was split.",
        "schema_version": "The schema version of new_digest (docs/SCHEMA.md).",
    },
}


def column_description(table: str, column: str) -> str | None:
    return COLUMN_DESCRIPTIONS.get(table, {}).get(column)
