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
    "fact_build_source": "For each source (a gh-pages run, a main-branch CSV, an import), one row per "
    "build its results stand for and label they are listed under: how many, the places of its runs in "
    "upstream's list and when they were observed, which dim_build adds up. One part per source. Derived "
    "at publish by sql/derived/fact_build_source.sql.",
    "dim_build": "One row per Liger build results stand for, in release order: each release (its "
    "release run and other runs of its commit, else its main-branch rows) and each nightly run, "
    "labelled <version>+<yyyymmdd>.<sha>, with the gh-pages runs that stand for it (runs) and the place "
    "of the newest in upstream's list (last_run_seq). Derived at publish by sql/derived/dim_build.sql.",
    "fact_run_point": "One row per series and gh-pages run: the result that stands for the series "
    "in the run. Derived at publish by sql/derived/fact_run_point.sql.",
    "series_latest_runs": "One row per series with gh-pages points: its verdict_rule().recent_runs "
    "newest gh-pages runs, newest first, which the next refresh's appended runs reach back to. Derived "
    "at publish by sql/derived/series_latest_runs.sql.",
    "fact_recent_point": "One row per series and gh-pages run: the series' recent level there, the "
    "median over that run and the runs before it that hold the series (verdict_rule().recent_runs at "
    "most), which compare_runs also judges a head against. Derived at publish by "
    "sql/derived/fact_recent_point.sql; docs/VERDICTS.md.",
    "fact_build_point": "One row per series and build: the median of the points the build stands on, "
    "how many and which. Derived at publish by sql/derived/fact_build_point.sql.",
    "fact_build_step": "One row per series on both sides of each pair of builds consecutive for some "
    "series: the change between them split into host drift, the kernel's baselines, the sweep and the "
    "series' own (decompose); consecutive marks the rows whose pair is the series' own step, which "
    "version_steps and regressions judge, and head_point numbers that step's head among the series' builds. "
    "One part per head build. Derived at publish by "
    "sql/derived/fact_build_step.sql; docs/VERDICTS.md.",
    "fact_speedup_pair": "One row per Liger result and baseline result one upstream revision showed "
    "together (same GPU, workload, mode, metric and Liger version), with both p50s and the build the "
    "Liger result stands for: what speedups and speedup_history read. One part per source. Derived at "
    "publish by sql/derived/fact_speedup_pair.sql.",
    "fact_restatement": "One row per result upstream no longer shows: the revision that changed it "
    "(the first of its source after the last that showed it; null when upstream stopped listing the "
    "source or the import was withdrawn) and the result of the same series that revision holds (null "
    "when it dropped the series): what restatements reads. One part per source. Derived at publish by "
    "sql/derived/fact_restatement.sql.",
    "fact_speedup_point": "One row per pairing of a Liger series with a baseline series and build: "
    "the median speedup over the pairs the build stands on (its runs, else its main-branch rows), how "
    "many and which: what speedup_history reads. One part per build. Derived at publish by "
    "sql/derived/fact_speedup_point.sql.",
    "fact_run_step": "One row per series and pair of consecutive gh-pages runs that hold it: the change "
    "between them split as fact_build_step splits a build step, which each series' noise is read from "
    "(the run_steps view serves it). One part per head run. Derived at publish by "
    "sql/derived/fact_run_step.sql; docs/VERDICTS.md.",
    "fact_series_spread": "One row per series: how much it moved from one gh-pages run to the next "
    "against its sweep, and how much its sweep shifted, from its run steps, before fact_series_noise "
    "pulls them toward similar series. Derived at publish by sql/derived/fact_series_spread.sql; "
    "docs/VERDICTS.md.",
    "fact_series_noise": "One row per series: its run-to-run noise (against its sweep, and its "
    "sweep's shifts), read from its gh-pages run history, and the smallest change a verdict can see "
    "in it. Derived at publish by sql/derived/fact_series_noise.sql; docs/VERDICTS.md.",
    "fact_speedup_step": "One row per pairing of a Liger series with a baseline series and gh-pages "
    "run that holds both: the log speedup there and its step from the last run before it that holds "
    "both, which the pairing's spread is read from. One part per head run. Derived at publish by "
    "sql/derived/fact_speedup_step.sql; docs/VERDICTS.md.",
    "fact_speedup_spread": "One row per pairing of a Liger series with a baseline series: how much the "
    "speedup of one over the other moved from one gh-pages run to the next, before fact_speedup_noise "
    "pulls it toward similar pairings, from its speedup steps, and its newest run (last_run). Derived at "
    "publish by sql/derived/fact_speedup_spread.sql; "
    "docs/VERDICTS.md.",
    "fact_speedup_noise": "One row per pairing of a Liger series with a baseline series: how much the "
    "speedup of one over the other moves from one gh-pages run to the next, which decides when a "
    "speedup is a tie. Derived at publish by sql/derived/fact_speedup_noise.sql; docs/VERDICTS.md.",
    "digest_migration": "Where a digest went when a schema version changed the identities behind it: "
    "kind (protocol, implementation, series, ...), the old digest, the new one and the schema version "
    "of the new one. A digest split by the new identities has several rows. Written by the refresh that "
    "migrates, carried over afterwards.",
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
    "digest_migration": {
        "kind": "Which digest: protocol, implementation, series, ... (the fact_result column without _digest).",
        "old_digest": "A digest of the schema version before.",
        "new_digest": "A digest it became; several rows per old digest when it was split.",
        "schema_version": "The schema version of new_digest (docs/SCHEMA.md).",
    },
}


def column_description(table: str, column: str) -> str | None:
    return COLUMN_DESCRIPTIONS.get(table, {}).get(column)
