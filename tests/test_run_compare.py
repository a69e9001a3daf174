"""The compares of consecutive gh-pages runs in the lake (fact_run_compare, fact_compare_commit,
fact_compare_file), the code order of runs (run_code_order) and the commits that may explain a
kernel's change between two runs (run_range_suspects, compare_runs), each checked against a plain
reading of the mirror's compare/ files."""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import Reference, refresh, require_full_mirror, require_mirror
from tests.fake_github import FakeGitHub
from tests.plain_duckdb import open_views
from tests.small_mirror import small_mirror

RUNS_FILE = Path("gh-pages") / "benchmarks" / "commits.txt"
# The folders whose files belong to kernels by their names (sql/macros/kernel_file_stem.sql).
KERNEL_FOLDERS = {
    "src/liger_kernel/ops",
    "src/liger_kernel/transformers",
    "src/liger_kernel/chunked_loss",
    "benchmark/scripts",
}


def _runs(mirror: Path) -> list[str]:
    return (mirror / RUNS_FILE).read_text().split()


def _commit(run: str) -> str:
    return run.split("-v")[0]


def _compare(mirror: Path, base_run: str, head_run: str) -> dict | None:
    path = mirror / "compare" / f"{_commit(base_run)}...{_commit(head_run)}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _date(commit: dict) -> datetime:
    text = commit["commit"]["committer"]["date"]
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)


def _head_date(data: dict) -> datetime:
    """The head's date by GitHub's status: behind, the head is the merge base; identical, the base."""
    if data["status"] in ("ahead", "diverged"):
        return _date(data["commits"][-1])
    return _date(data["merge_base_commit"] if data["status"] == "behind" else data["base_commit"])


def _words(message: str) -> set[str]:
    return set(re.split(r"[^a-z0-9_]+", message.lower()))


def _squash(words: set[str]) -> set[str]:
    """Without underscores: a message's 'layernorm' names the stem layer_norm."""
    return {w.replace("_", "") for w in words}


def _title(commit: dict) -> str:
    return commit["commit"]["message"].split("\n")[0]


def _run_row(base: str, head: str, data: dict) -> tuple:
    counts = (data["status"], data["ahead_by"], data["behind_by"], data["total_commits"])
    merge_base = data["merge_base_commit"]
    dates = (_date(data["base_commit"]), _head_date(data), merge_base["sha"][:7], _date(merge_base))
    return (base, head, _commit(base), _commit(head), *counts, *dates)


def _commit_row(base: str, head: str, position: int, c: dict) -> tuple:
    numbers = re.findall(r"\(#(\d+)\)", _title(c))
    pull_request = int(numbers[-1]) if numbers else None
    about = (c["commit"]["author"]["name"], _date(c), c["commit"]["message"], c["html_url"])
    return (base, head, position, c["sha"], _title(c), pull_request, *about)


def _expected(mirror: Path) -> dict[str, set[tuple]]:
    runs, commits, files = set(), set(), set()
    for base, head in pairwise(_runs(mirror)):
        data = _compare(mirror, base, head)
        runs.add(_run_row(base, head, data))
        commits.update(_commit_row(base, head, position, c) for position, c in enumerate(data["commits"]))
        for f in data["files"]:
            files.add((base, head, f["filename"], f["status"], f["additions"], f["deletions"], f["changes"]))
    return {"fact_run_compare": runs, "fact_compare_commit": commits, "fact_compare_file": files}


COLUMNS = {
    "fact_run_compare": "base_run, head_run, base_commit, head_commit, status, ahead_by, behind_by, total_commits, "
    "base_committed_at, head_committed_at, merge_base_commit, merge_base_committed_at",
    "fact_compare_commit": "base_run, head_run, position, sha, title, pr_number, author, committed_at, message, "
    "html_url",
    "fact_compare_file": "base_run, head_run, filename, status, additions, deletions, changes",
}


def _lake(database: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_views(database) as con:
        return con.execute(sql, params or []).fetchall()


def test_each_compare_of_consecutive_runs_is_in_the_lake(mirror_warehouse: Reference) -> None:
    expected = _expected(require_mirror())
    assert len(expected["fact_run_compare"]) == len(_runs(require_mirror())) - 1
    for table, columns in COLUMNS.items():
        got = _lake(mirror_warehouse.database, f"select {columns} from {table}")
        assert len(got) == len(set(got)) and set(got) == expected[table], table


def _file_stem(filename: str) -> str | None:
    folder, _, name = filename.rpartition("/")
    if folder not in KERNEL_FOLDERS or not name.endswith(".py"):
        return None
    return name.removesuffix(".py").removeprefix("benchmark_")


def _suspects(mirror: Path, runs: list[str], stems: set[str]) -> tuple[int, bool, list[str]]:
    """commits_between, code_changed and suspect_commits of one kernel over consecutive ``runs``."""
    ranges = [_compare(mirror, base, head) for base, head in pairwise(runs)]
    shas = {c["sha"] for data in ranges for c in data["commits"]}
    touched = [data for data in ranges if any(_file_stem(f["filename"]) in stems for f in data["files"])]
    assert all(data["behind_by"] == 0 for data in ranges), "the fixture's ranges all go forward"
    suspects: dict[str, str] = {}
    for data in touched:
        named = [c for c in data["commits"] if _squash(stems) & _squash(_words(c["commit"]["message"]))]
        for c in named or data["commits"]:
            suspects.setdefault(c["sha"], f"{c['sha'][:7]} {_title(c)}")
    return len(shas), bool(touched), list(suspects.values())


def test_the_suspects_of_a_kernel_are_the_commits_of_the_ranges_that_changed_its_files(
    mirror_warehouse: Reference,
) -> None:
    mirror, database = require_mirror(), mirror_warehouse.database
    runs = _runs(mirror)
    stems: dict[str, set[str]] = {}
    for kernel, stem in _lake(database, "select kernel, stem from kernel_files"):
        stems.setdefault(kernel, set()).add(stem)
    assert {k for (k,) in _lake(database, "select distinct kernel from dim_workload")} == set(stems)
    for base, head in [(runs[0], runs[-1]), (runs[2], runs[5]), (runs[-3], runs[-2])]:
        expected = {
            kernel: _suspects(mirror, runs[runs.index(base) : runs.index(head) + 1], s) for kernel, s in stems.items()
        }
        for args in [(base, head), (head, base)]:
            got = _lake(
                database,
                "select kernel, commits_between, code_changed, suspect_commits from run_range_suspects(?, ?)",
                list(args),
            )
            assert {kernel: tuple(rest) for kernel, *rest in got} == expected, args
        assert any(s for _, _, s in expected.values()), "some kernel has suspects"
    same = _lake(
        database,
        "select distinct commits_between, code_changed, suspect_commits from run_range_suspects('latest', 'latest')",
    )
    assert same == [(0, False, [])]


def test_compare_runs_names_the_suspects_of_each_series_kernel(mirror_warehouse: Reference) -> None:
    runs = _runs(require_mirror())
    base, head = runs[-3], runs[-2]
    got = _lake(
        mirror_warehouse.database,
        "select distinct c.kernel, c.commits_between, c.suspect_commits = s.suspect_commits "
        "from compare_runs(?, ?) as c join run_range_suspects(?, ?) as s using (kernel)",
        [base, head, base, head],
    )
    commits = len(_compare(require_mirror(), base, head)["commits"])
    assert got and {(n, same) for _, n, same in got} == {(commits, True)}


def _summary_warnings(root: Path) -> list[str]:
    rows = _lake(
        root / "catalog.sqlite",
        "select commit_extra_info from ducklake_snapshots('liger') where commit_extra_info is not null",
    )
    return [w for (info,) in rows for w in json.loads(info)["warnings"]]


@pytest.mark.slow
def test_without_compares_the_warehouse_builds_and_a_later_refresh_takes_them_in(tmp_path: Path) -> None:
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=4)
    shutil.move(mirror / "compare", tmp_path / "compare")
    runs = _runs(mirror)
    root = tmp_path / "warehouse"
    with FakeGitHub(mirror) as fake:  # GitHub answers 404 to every compare
        assert refresh(root, fake).result.success
        database = root / "catalog.sqlite"
        for table in COLUMNS:
            assert _lake(database, f"select count(*) from {table}") == [(0,)], table
        order = _lake(
            database,
            "select run, code_committed_at, code_rank, compare_status, is_rebenchmark "
            "from run_code_order order by upload_rank",
        )
        assert [run for run, *_ in order] == runs and {tuple(rest) for _, *rest in order} == {(None,) * 4}
        verdicts = _lake(
            database, "select distinct commits_between, suspect_commits from compare_runs('previous', 'latest')"
        )
        assert verdicts == [(None, [])]
        # Without a compare no step is judged for an environment shift: no verdict is 'environment'.
        assert _lake(database, "select count(*) from environment_shifts") == [(0,)]
        assert _lake(database, "select count(*) from fact_environment_step") == [(0,)]

        # A stored compare that will not read is named and skipped; the others come in.
        shutil.move(tmp_path / "compare", mirror / "compare")
        broken = f"{_commit(runs[0])}...{_commit(runs[1])}"
        raw = root / "raw" / "compare" / f"{broken}.json.gz"
        raw.parent.mkdir(parents=True)
        raw.write_bytes(b"not gzip")
        assert refresh(root, fake).result.success
    pairs = _lake(database, "select base_run, head_run from fact_run_compare")
    assert sorted(pairs) == sorted(pairwise(runs[1:]))
    assert [w for w in _summary_warnings(root) if f"raw/compare/{broken}.json.gz" in w], _summary_warnings(root)


def test_a_rebenchmark_of_older_code_is_labelled_and_ordered_by_its_code(full_mirror_warehouse: Reference) -> None:
    mirror = require_full_mirror()
    runs = _runs(mirror)
    rows = _lake(
        full_mirror_warehouse.database,
        "select run, previous_run, upload_rank, code_rank, code_committed_at, compare_status, is_rebenchmark "
        "from run_code_order order by upload_rank",
    )
    order = {run: rest for run, *rest in rows}
    assert [run for run, *_ in rows] == runs
    for base, head in pairwise(runs):
        data = _compare(mirror, base, head)
        previous, _, _, committed_at, status, rebenchmark = order[head]
        assert (previous, status, rebenchmark) == (base, data["status"], data["status"] == "behind"), head
        assert committed_at == _head_date(data), head
    assert _compare(mirror, "1c07943", "77a4c1a")["status"] == "behind"
    assert order["77a4c1a"][-1] is True
    assert order["77a4c1a"][1] > order["1c07943"][1] and order["77a4c1a"][2] < order["1c07943"][2]
    # Code order is the order of the dates, upload order breaking ties.
    dated = sorted((r for r in rows if r[4] is not None), key=lambda r: (r[4], r[2]))
    assert [r[3] for r in dated] == list(range(1, len(dated) + 1))
