"""What the Dagster UI shows: every asset described, grouped and kinded; the refresh freshness
policy; commit links; the regressions table and the warning-level check on new regressions."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from liger_warehouse.audit import regression_watch
from liger_warehouse.runtime import progress
from liger_warehouse.runtime.refresh_summary import commit_url, repository_url, revisions_markdown
from pipelines.definitions import load
from tests.conftest import refresh
from tests.small_mirror import small_mirror

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_every_asset_has_a_description_a_group_and_kinds():
    graph = load().resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description, key
        assert node.group_name and node.group_name != "default", key
        assert node.kinds, key
    kinds = set().union(*(graph.get(k).kinds for k in graph.get_all_asset_keys()))
    assert {"ducklake", "parquet", "duckdb"} <= kinds


def test_freshness_warns_when_the_warehouse_has_not_refreshed_for_36_hours():
    policy = load().resolve_asset_graph().get(dg.AssetKey("upstream_snapshots")).freshness_policy
    assert isinstance(policy, dg.FreshnessPolicy)
    assert policy.warn_window.to_timedelta() == timedelta(hours=36)
    assert policy.fail_window.to_timedelta() > timedelta(hours=36)


def test_commit_links_for_main_and_gh_pages():
    main = {"commit": SHA, "html_url": f"https://github.com/linkedin/Liger-Kernel/commit/{SHA}"}
    assert commit_url(main) == main["html_url"]
    assert commit_url({"commit": "0a62700-v0.6.4"}) == "https://github.com/linkedin/Liger-Kernel/commit/0a62700"
    assert commit_url({"commit": "b6ed735"}, repository_url("github:me/fork")) == (
        "https://github.com/me/fork/commit/b6ed735"
    )
    assert repository_url("/some/mirror") == "https://github.com/linkedin/Liger-Kernel"
    assert commit_url({"commit": "not a commit"}) is None


def test_revisions_markdown_links_every_revision():
    text = revisions_markdown(
        [
            {"revision": "gh-pages run b6ed735", "commit": "b6ed735", "rows": 3, "new_results": 2, "quarantined": 1},
            {"revision": "a.csv @ 0123", "commit": SHA, "html_url": "https://x/y", "rows": 1, "new_results": 1,
             "quarantined": 0},
        ]
    )  # fmt: skip
    link = "[b6ed735](https://github.com/linkedin/Liger-Kernel/commit/b6ed735)"
    assert f"| gh-pages run b6ed735 | {link} | 3 | 2 | 1 |" in text
    assert f"[{SHA[:12]}](https://x/y)" in text
    assert revisions_markdown([]) == "no upstream revision ingested"


def test_progress_reaches_listeners_only_while_listening():
    seen = []
    with progress.listening(lambda *args: seen.append(args)):
        progress.report("download", 1, 2, "x")
    progress.report("download", 2, 2, "y")
    assert seen == [("download", 1, 2, "x")]


def _database(path: Path, rows: list[tuple], view: bool = True) -> duckdb.DuckDBPyConnection:
    """A reader of a stand-in lake: builds in release order and a `regressions` view of ``rows``
    (kernel, head build, adjusted change, verdict, and optionally muted, acknowledged)."""
    with duckdb.connect(str(path)) as con:
        con.execute("create table dim_build as select * from (values ('0.1.0', 1), ('0.2.0', 2), ('0.3.0', 3)) "
                    "t(build, build_rank)")  # fmt: skip
        con.execute(
            "create table r (kernel varchar, head_version varchar, adjusted_change double, verdict varchar, "
            "muted boolean default false, acknowledged varchar)"
        )
        for row in rows:
            con.execute(f"insert into r values ({', '.join('?' * len(row))}{', default' * (6 - len(row))})", row)
        if view:
            given = ("kernel", "head_version", "adjusted_change")
            shown = ", ".join(f"null as {c}" for c in (*regression_watch.SHOWN, "series_digest") if c not in given)
            con.execute(f"create view regressions as select *, {shown} from r")
    return duckdb.connect(str(path), read_only=True)


def test_regressions_are_read_newest_build_first(tmp_path: Path):
    rows = [("a", "0.2.0", 0.5, "regression"), ("b", "0.3.0", 0.2, "regression"), ("c", "0.3.0", 0.9, "regression"),
            ("d", "0.3.0", -0.5, "improvement"), ("e", "0.3.0", 0.7, "regression", True),
            ("f", "0.3.0", 0.8, "regression", False, "expected")]  # fmt: skip
    with _database(tmp_path / "new.duckdb", rows) as con:
        found = regression_watch.read(con)
    kernel = found.columns.index("kernel")
    # newest build, then the largest change; muted (e) and acknowledged (f) are no news
    assert [r[kernel] for r in found.rows] == ["c", "b", "a"]
    table = regression_watch.markdown(found)
    assert table.splitlines()[0] == "| " + " | ".join(regression_watch.SHOWN) + " |"
    assert "| c |" in table and "| d |" not in table


def test_regressions_without_the_view(tmp_path: Path):
    with _database(tmp_path / "noview.duckdb", [], view=False) as con:
        missing = regression_watch.read(con)
    assert not missing.available and "could not read the regressions view" in missing.note
    assert "could not read the regressions view" in regression_watch.markdown(missing)


def _regression_check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    (check,) = [c for c in result.get_asset_check_evaluations() if c.check_name == "no_new_regressions"]
    return check


def _add_slower_release(mirror: Path) -> None:
    """One more commit of all_benchmark_data.csv: one row measured again at a new version, 100x slower."""
    listing = mirror / "commits" / "all_benchmark_data.json"
    commits = json.loads(listing.read_text())
    head = mirror / "raw" / commits[0]["sha"] / "benchmark/data/all_benchmark_data.csv.gz"
    lines = gzip.decompress(head.read_bytes()).split(b"\r\n")
    row = next(line for line in lines[1:] if line.split(b",")[4] == b"ms").split(b",")
    row[8:11] = [str(float(v) * 100).encode() for v in row[8:11]]
    row[-1] = b"99.0.0"
    lines.insert(len(lines) - 1 if lines[-1] == b"" else len(lines), b",".join(row))
    target = mirror / "raw" / SHA / "benchmark/data/all_benchmark_data.csv.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(b"\r\n".join(lines)))
    listing.write_text(json.dumps([{**commits[0], "sha": SHA, "html_url": None}, *commits]))


@pytest.mark.slow
def test_a_refresh_that_ingests_a_regression_warns(tmp_path: Path):
    mirror = small_mirror(tmp_path / "mirror")
    first = refresh(tmp_path / "warehouse", upstream=str(mirror))
    assert first.result.success
    # The first publish brings the whole history, regressions included: not news.
    check = _regression_check(first.result)
    assert check.passed and check.metadata["new_regressions"].value == 0
    assert check.description.startswith("not checked: first publish, nothing to compare with: the history holds ")
    _add_slower_release(mirror)
    second = refresh(tmp_path / "warehouse", upstream=str(mirror))
    assert second.result.success  # a warning, not a failure
    check = _regression_check(second.result)
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert not check.passed
    assert check.metadata["new_regressions"].value >= 1
    table = check.metadata["regressions"].value
    rows = [line for line in table.splitlines() if line.startswith("| ") and "kernel" not in line]
    assert rows and all("| 99.0.0 |" in line for line in rows), table
    # The refresh after that brings nothing new: nothing is judged, nothing warns again.
    third = refresh(tmp_path / "warehouse", upstream=str(mirror))
    check = _regression_check(third.result)
    assert check.passed and check.description == "not checked: nothing new was published"
