"""Speed and scale benchmarks of the warehouse (issue 5).

    python -m benchmarks.run --sizes 1e5,1e6,1e7 --repeats 3 --out docs/BENCHMARK-OUTPUT.md

See ``benchmarks/run.py`` for the scenarios, ``docs/PERFORMANCE.md`` for the targets and the latest
figures, ``docs/BENCHMARK-OUTPUT.md`` for what the scripts last wrote and ``benchmarks/results/``
for the dated measurements.
"""
