"""Synthetic upstream mirrors for benchmarks and scale tests (``python -m benchmarks.synthetic``)."""

from benchmarks.synthetic.generate import Settings, Stats, generate, revisions_for

__all__ = ["Settings", "Stats", "generate", "revisions_for"]
