"""The warehouse of record for Liger-Kernel benchmark results."""
