"""Plumbing: failpoints, progress reporting, refresh summaries and warehouse status."""
