"""Synthetic upstream mirrors for benchmarks and scale tests (``python -m pipelines.synthetic``)."""

from pipelines.synthetic.generate import Settings, Stats, generate, revisions_for

__all__ = ["Settings", "Stats", "generate", "revisions_for"]
