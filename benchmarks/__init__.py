"""Speed and scale benchmarks of the warehouse (issue 5).

    python -m benchmarks.run --sizes 1e5,1e6,1e7 --repeats 3 --out docs/PERFORMANCE.md

See ``benchmarks/run.py`` for the scenarios and ``docs/PERFORMANCE.md`` for the results.
"""
