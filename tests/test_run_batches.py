"""The look-up of an appended run's series' latest runs (``run_batches.look_up_latest``) reads the
newest runs first and widens until each series has its runs: the rows are those of a look-up
over every run, for series held in every run, in few runs, or new."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from liger_warehouse.analysis import run_batches

EARLIER = [f"r{i:02d}" for i in range(12)]
HELD = {
    "every": EARLIER,
    "old_and_new": ["r00", "r01", "r11"],  # two of its runs are older than any small window
    "once_long_ago": ["r03"],
}


def _latest(window: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    monkeypatch.setattr(run_batches, "LATEST_WINDOW", window)
    con = duckdb.connect()
    runs = [*EARLIER, "r12"]
    con.register(
        "dim_upstream_revision",
        pa.table({"source": ["gh-pages"] * len(runs), "run": runs, "seq": list(range(len(runs)))}),
    )
    points = [(run, series) for series, held in HELD.items() for run in held]
    points += [("r12", series) for series in [*HELD, "new"]]
    con.register("fact_run_point", pa.table({"run": [r for r, _ in points], "series_digest": [s for _, s in points]}))
    con.register("appended_run", pa.table({"run": ["r12"]}))
    run_batches.look_up_latest(con, EARLIER, 4)
    return dict(con.execute("select series_digest, runs from appended_latest").fetchall())


@pytest.mark.parametrize("window", [1, 2, 64])
def test_the_latest_runs_are_those_of_a_look_up_over_every_run(window: int, monkeypatch: pytest.MonkeyPatch):
    assert _latest(window, monkeypatch) == {
        "every": ["r11", "r10", "r09", "r08"],
        "old_and_new": ["r11", "r01", "r00"],
        "once_long_ago": ["r03"],
        "new": [],
    }
