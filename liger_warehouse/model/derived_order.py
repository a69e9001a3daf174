"""The order of each derived table's rows (``sql/derived/``), stable, so that an unchanged table
is the same bytes and keeps its part. Derivation writes its parts in it (its first column is
the key of a table kept in a part per run, source or build); the readers' copies
(``serve/readers_copy.py``) break their ties with it."""

ORDER = {
    "dim_series": ["series_digest"],
    "fact_build_source": ["source_key", "build", "source_label"],
    "dim_build": ["build_rank"],
    "fact_run_point": ["run", "series_digest"],
    "series_latest_runs": ["series_digest"],
    "fact_recent_point": ["run", "series_digest"],
    "fact_build_point": ["build", "series_digest"],
    "fact_build_step": ["head_build", "base_build", "series_digest"],
    "fact_speedup_pair": ["source_key", "liger_result_digest", "baseline_result_digest"],
    "fact_speedup_point": ["build", "liger_series_digest", "baseline_series_digest"],
    "fact_run_step": ["head_run", "series_digest"],
    "fact_series_spread": ["series_digest"],
    "fact_series_noise": ["series_digest"],
    "fact_speedup_step": ["head_run", "liger_series_digest", "baseline_series_digest"],
    "fact_speedup_spread": ["liger_series_digest", "baseline_series_digest"],
    "fact_speedup_noise": ["liger_series_digest", "baseline_series_digest"],
    "fact_restatement": ["source_key", "result_digest"],
}
