"""What one row of each warehouse table means, and what the columns of the most-read ones mean:
shown on each table's asset and beside each column in the Dagster UI.

Column descriptions are keyed by table, then column; a column without an entry is shown without
a description.
"""

from __future__ import annotations

DESCRIPTIONS = {
    "dim_protocol": "How a number was measured: harness (the benchmark suite, one per upstream file), timed "
    "pass (forward/backward/full), metric, unit, statistic and quantiles. One row per distinct protocol.",
    "dim_workload": "What was run: kernel, x axis name/label/value and the parsed benchmark config, "
    "as typed params, canonical JSON and a readable slug. One row per distinct workload.",
    "dim_environment": "Where it ran: the raw gpu_name plus vendor, product, form factor and "
    "architecture from the GPU catalog (nulls for GPUs the catalog does not know).",
    "dim_implementation": "Whose kernel: provider, Liger version and Liger backend (triton, cutedsl, cutile; "
    "null for a baseline such as torch).",
    "dim_version": "Every Liger version a result shows, but for a withdrawn import's, with its semantic rank "
    "(1 = oldest).",
    "dim_upstream_revision": "One row per upstream revision ingested: a main-branch commit of a CSV "
    "path or a gh-pages run, with its content digest, row counts and whether upstream still lists it.",
    "fact_result": "One row per result ever published: one distinct row text within one source "
    "(a main-branch path or a gh-pages run), with its four dimension digests, p20/p50/p80, the "
    "first and last revision that showed it and whether upstream shows it today.",
    "fact_revision_member": "Which results each revision held, at which line, with the exact text "
    "between records, so every upstream file can be rebuilt byte for byte.",
    "quarantined_row": "Upstream rows that failed validation, with the reason, revision and line.",
    "golden_commit": "The reference gh-pages run per kernel, as upstream's golden_commits.json keeps it.",
    "fact_run_compare": "One row per pair of consecutive gh-pages runs (upload order) whose GitHub compare "
    "the raw store holds: the two runs and commits, status (ahead, behind, diverged, identical), ahead_by, "
    "behind_by, the commit dates of base, head and merge base. Ingested once: a compare never changes.",
    "fact_compare_commit": "One row per commit of a compare of consecutive gh-pages runs (position 0 = "
    "oldest): sha, title, the pull request its title names, author, committer date, message and URL.",
    "fact_compare_file": "One row per file a compare of consecutive gh-pages runs changed (between the "
    "merge base and the head run): filename, status, additions, deletions, changes.",
    "fact_change_point": "Change points in each series' gh-pages run history (Apache Otava e-divisive): "
    "the run where the level shifted, with the medians before and after. Computed at publish, "
    "in the publishing transaction, not ingested.",
    "change_point_state": "Where the change point detection of each series stands, so the next "
    "refresh resumes it instead of starting over: the points analyzed, a digest of them, where "
    "Otava's sliding windows resume and the weak change points of the windows already complete. "
    "Computed with fact_change_point, not ingested.",
    "triage_event": "One row per triage write (`liger-warehouse ack`, `annotate`, `mute`, `unmute`, "
    "`threshold`): what it said of which series, sweep, kernel or runs, who wrote it, when and why. "
    "Written by people, kept by every refresh, never rewritten.",
}

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
    "fact_run_compare": {
        "base_run": "The gh-pages run uploaded first, as upstream names it (e.g. 81f932a-v0.6.5).",
        "head_run": "The gh-pages run uploaded right after it.",
        "status": "GitHub's: ahead (head is newer code), behind (head benchmarked older code: a "
        "re-benchmark), diverged, identical.",
        "head_committed_at": "The head commit's committer date (UTC): the last commit for ahead or "
        "diverged, the merge base for behind, the base for identical.",
    },
}


def column_description(table: str, column: str) -> str | None:
    return COLUMN_DESCRIPTIONS.get(table, {}).get(column)
