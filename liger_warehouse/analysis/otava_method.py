"""What Otava's change point detection is run with: its parameters and the label stored with
every row of ``fact_change_point`` and ``change_point_state``.

Apart from ``otava_split.py`` because it imports neither Otava nor SciPy: the process that
streams the points names the method and selects the prior state by it, while Otava itself
loads only where series are analysed (``series_pool.py``).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import version

WINDOW = 50
MAX_PVALUE = 0.001
MIN_MAGNITUDE = 0.05
# Fewer points than this and a t-test over the two sides says little.
MIN_POINTS = 10
# Otava's split step looks for weak change points at a relaxed p-value, as compute_change_points.
FIRST_PASS_PVALUE = MAX_PVALUE * 10 if MAX_PVALUE < 0.05 else (MAX_PVALUE * 2 if MAX_PVALUE < 0.5 else MAX_PVALUE)
STEP = int(WINDOW / 2)


@cache
def method() -> str:
    """What produced the table, stored with every row so a reader can tell runs apart. Cached: the
    version lookup scans the installed distributions (about 2 ms), and every batch of series asks."""
    return (
        f"apache-otava {version('apache-otava')} e-divisive: window={WINDOW} "
        f"max_pvalue={MAX_PVALUE} min_magnitude={MIN_MAGNITUDE} min_points={MIN_POINTS}"
    )
