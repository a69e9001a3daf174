"""The README's worked examples are this warehouse's answers on the upstream snapshot in
../shared: every example query prints what the README shows, the command-line example too, and
every figure its prose quotes is recounted. An example cannot drift from the code silently.
They quote the whole snapshot, so they form the larger tier (``full_mirror_warehouse``)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.lake.extensions import packaged
from tests.plain_duckdb import open_views
from tests.test_cli_query import duckdb_cli

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE = re.compile(r"```sql\n(?P<sql>.*?)```\n```\n(?P<out>.*?)```", re.S)
COMMAND = re.compile(r"```\n\$ liger-warehouse (?P<args>[^\n]*)\n(?P<out>.*?)```", re.S)
# How the README tells any DuckDB client to open the lake of ./warehouse.
ATTACH = "ATTACH 'ducklake:sqlite:warehouse/catalog.sqlite' AS liger (READ_ONLY); USE liger;"


def _examples() -> list[tuple[str, str]]:
    return [(m["sql"], m["out"]) for m in EXAMPLE.finditer(README.read_text())]


def _figure(text: str) -> int:
    return int(text.replace(",", ""))


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def _attach_commands(root: Path) -> list[str]:
    """The standalone DuckDB CLI's start-up commands: the extensions loaded offline from their pip
    packages, as the README says, then the README's own ATTACH of the lake, pointed at ``root``."""
    assert ATTACH in README.read_text(), "the README no longer says how to attach the lake"
    loads = [f"LOAD '{packaged(name)}';" for name in ("ducklake", "sqlite_scanner")]
    return [*loads, ATTACH.replace("sqlite:warehouse/", f"sqlite:{root}/")]


@pytest.mark.parametrize(("sql", "shown"), _examples(), ids=[f"example-{i}" for i, _ in enumerate(_examples(), 1)])
def test_every_example_query_prints_what_the_readme_shows(full_mirror_warehouse, sql: str, shown: str):
    startup = [arg for command in _attach_commands(full_mirror_warehouse.root) for arg in ("-cmd", command)]
    done = subprocess.run([duckdb_cli(), *startup], input=sql, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout) == _lines(shown)


def test_the_command_line_example_prints_what_the_readme_shows(full_mirror_warehouse, monkeypatch):
    (example,) = COMMAND.finditer(README.read_text())
    monkeypatch.setenv("LIGER_WAREHOUSE_DIR", str(full_mirror_warehouse.root))
    done = CliRunner().invoke(app, shlex.split(example["args"]))
    assert done.exit_code == 0, done.output
    assert _lines(done.stdout) == _lines(example["out"])


def test_the_figures_in_the_prose(full_mirror_warehouse):
    text = " ".join(README.read_text().split())
    with open_views(full_mirror_warehouse.database) as con:
        # The snapshot the examples describe.
        runs, newest = con.execute(
            "select count(*), arg_max(run, seq) from dim_upstream_revision where source = 'gh-pages'"
        ).fetchone()
        main = con.execute(
            "select left(arg_max(commit, committed_at), 7) from dim_upstream_revision where source = 'main'"
        ).fetchone()[0]
        assert f"({runs} gh-pages runs up to `{newest}`, main-branch history up to `{main}`)" in text

        counted = re.search(
            r"Of the ([\d,]+) H100 series in both releases .*?, ([\d,]+) are regressions \(([\d,]+) of them "
            r"Liger's\), ([\d,]+) environment .*?, ([\d,]+) improvements, ([\d,]+) unchanged and ([\d,]+) inconclusive",
            text,
        )
        assert counted, "the 0.6.3 -> 0.7.0 H100 counts are not where the test looks for them"
        want = con.execute(
            "select count(*), count(*) filter (where verdict = 'regression'), "
            "count(*) filter (where verdict = 'regression' and starts_with(provider, 'liger')), "
            "count(*) filter (where verdict = 'environment'), "
            "count(*) filter (where verdict = 'improvement'), count(*) filter (where verdict = 'unchanged'), "
            "count(*) filter (where verdict = 'inconclusive') "
            "from compare_versions('0.6.3', '0.7.0') where gpu like '%H100%'"
        ).fetchone()
        assert tuple(_figure(g) for g in counted.groups()) == want

        # "flags under 1% of the series, where the old rule ... flagged 9-16%", on two runs of one commit.
        assert "two newest runs are two runs of one commit, `7644a0f-v0.7.0` and `7644a0f`" in text
        old_rule, new_rule = [], []
        for base, head in (("7644a0f-v0.7.0", "7644a0f"), ("0a62700-v0.6.4", "0a62700")):
            flagged, old, series = con.execute(
                "select count(*) filter (where verdict in ('regression', 'improvement')), "
                "count(*) filter (where abs(change) > 0.05 and (head_p20 > base_p80 or base_p20 > head_p80)), "
                "count(*) from compare_runs(?, ?)",
                [base, head],
            ).fetchone()
            new_rule.append(flagged / series)
            old_rule.append(old / series)
        assert max(new_rule) < 0.01
        assert "flagged 9\u201316%" in text and [round(100 * r) for r in old_rule] == [9, 16]
