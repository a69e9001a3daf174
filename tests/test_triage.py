"""Triage: acknowledgements, annotations, mutes and thresholds are writes the lake keeps as history,
and the digest, `regressions` and `compare_runs` honour them (docs/TRIAGE.md).

One story over a small mirror, with real refreshes (a real Dagster run each), a real webhook
server on loopback and the real CLI: a run doubles three steady kernels' Liger timings; one
kernel is muted before it arrives, one is acknowledged after its alert, one is left alone. The
answers are checked against plain SQL over the lake, not against what the digest code returns.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from tests.alerting import inject_run, issue_server, runs, steadiest_kernels, url, webhook_server
from tests.conftest import refresh
from tests.plain_duckdb import open_views
from tests.reliability.published import cli_env, cli_script, dagster_home
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

FIRST, SECOND = "abcdef0", "abcdef1"


@dataclass
class Story:
    root: Path
    mirror: Path
    acked: str
    alerted: str
    muted: str
    posts: list[list[tuple[str, dict]]]  # what the webhook received at each alerting refresh
    before_ack: int  # the lake's snapshot just before the acknowledgement
    killed: subprocess.CompletedProcess
    issues: list[dict]  # the GitHub issues after the last refresh (one was open before it)
    tokens: list[str | None]  # the Authorization header of every call to the issue tracker


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def snapshot(root: Path) -> int:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute("select max(snapshot_id) from ducklake_snapshots('liger')").fetchone()[0]


def triage_rows(root: Path) -> list[tuple]:
    with open_views(root / "catalog.sqlite") as con:
        return con.execute(
            "select action, scope, target, first_run, kind, note from triage_event order by recorded_at"
        ).fetchall()


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Story:
    tmp = tmp_path_factory.mktemp("triage")
    mirror = small_mirror(tmp / "mirror", commits=1, runs=12)
    root = tmp / "warehouse"
    assert refresh(root, upstream=str(mirror)).result.success
    acked, alerted, muted = steadiest_kernels(root, 3)
    newest = runs(mirror)[-1]
    code, said = cli("mute", "--kernel", muted, "--note", "too noisy to alert on", "--warehouse", str(root))
    assert code == 0, said
    posts = []
    with webhook_server() as server, issue_server() as tracker:
        hooks = {
            "LIGER_WAREHOUSE_ALERT_WEBHOOK": url(server, "/hook"),
            "LIGER_WAREHOUSE_ALERT_GITHUB_REPO": "linkedin/Liger-Kernel",
            "LIGER_WAREHOUSE_ALERT_GITHUB_TOKEN": "issue-token",
            "LIGER_WAREHOUSE_GITHUB_API": url(tracker, ""),
        }
        inject_run(mirror, FIRST, [acked, alerted, muted], copy_of=newest)
        assert refresh(root, upstream=str(mirror), **hooks).result.success
        posts.append(list(server.received))
        injected = {
            f"Benchmark regression: {k} {m}" for k in (acked, alerted, muted) for m in ("forward", "backward", "full")
        }
        assert not injected & {i["title"] for i in tracker.issues}, "suspected only: no issue yet"
        # one of the kernel's passes has an issue open already: it gets a comment, not a twin
        seeded = f"Benchmark regression: {alerted} {_flagged_modes(root, mirror, alerted)[0]}"
        tracker.issues.append({"number": 1000, "state": "open", "comments": [], "title": seeded})
        before_ack = snapshot(root)
        code, said = cli(
            "ack", "--kernel", acked, "--run", FIRST, "--kind", "expected", "--note", "trades speed for memory (#1)",
            "--by", "perf-oncall", "--warehouse", str(root),
        )  # fmt: skip
        assert code == 0, said
        # the next run keeps the slowdown: a refresh killed before its commit, then a whole one
        inject_run(mirror, SECOND, [acked, alerted, muted], copy_of=newest)
        env = cli_env(dagster_home(tmp / "dagster"), LIGER_WAREHOUSE_UPSTREAM=str(mirror), **hooks)
        killed = subprocess.run(
            [*cli_script(), "refresh", "--warehouse", str(root)],
            env={**env, "LIGER_WAREHOUSE_FAILPOINT": "publish"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        server.received.clear()
        assert refresh(root, upstream=str(mirror), **hooks).result.success
        posts.append(list(server.received))
    return Story(root, mirror, acked, alerted, muted, posts, before_ack, killed, tracker.issues, tracker.tokens)


def _flagged_modes(root: Path, mirror: Path, kernel: str) -> list[str]:
    with open_views(root / "catalog.sqlite") as con:
        rows = con.execute(
            "select distinct mode from compare_runs(?, ?) where kernel = ? and verdict = 'regression' order by mode",
            [runs(mirror)[runs(mirror).index(FIRST) - 1], FIRST, kernel],
        ).fetchall()
    return [mode for (mode,) in rows]


def test_one_post_names_the_injected_regressions_and_matches_the_digest_file(story: Story) -> None:
    [(path, posted)] = story.posts[0]
    assert path == "/hook"
    assert posted == json.loads((story.root / "digests" / f"{FIRST}.json").read_text())
    [entry] = posted["runs"]
    regressed = {line["kernel"] for line in entry["lines"] if line["verdict"] == "regression"}
    assert regressed == {story.acked, story.alerted}, "the muted kernel is not alerted"
    assert {x["kernel"] for x in entry["left_out"]} == {story.muted}
    assert {x["reason"] for x in entry["left_out"]} == {"muted"}
    with open_views(story.root / "catalog.sqlite") as con:
        flagged = con.execute(
            "select kernel, count(*) from compare_runs(?, ?) where verdict = 'regression' group by kernel",
            [runs(story.mirror)[-3], FIRST],
        ).fetchall()
    lines = Counter()
    for line in entry["lines"]:
        lines[line["kernel"]] += len(line["series"]) if line["verdict"] == "regression" else 0
    assert lines == {k: n for k, n in flagged if k != story.muted}
    assert sum(x["series"] for x in entry["left_out"]) == dict(flagged)[story.muted]


def test_an_acknowledged_flag_is_not_alerted_again(story: Story) -> None:
    [(_, posted)] = story.posts[1]
    follow = posted["follow_up"]
    assert (follow["previous_run"], follow["run"]) == (runs(story.mirror)[-3], FIRST)
    confirmed = {line["kernel"] for line in follow["lines"]}
    assert confirmed == {story.alerted}, "the unacknowledged kernel comes back confirmed, the others do not"
    assert all(line["confirmed"] == len(line["series"]) for line in follow["lines"])
    assert {(x["kernel"], x["reason"]) for x in follow["left_out"]} == {
        (story.acked, "acknowledged (expected)"),
        (story.muted, "muted"),
    }
    [entry] = posted["runs"]
    assert entry["run"] == SECOND and entry["lines"] == [], "an unchanged run brings nothing new"


def test_regressions_show_the_acknowledgement_and_keep_the_muted_kernel(story: Story) -> None:
    with open_views(story.root / "catalog.sqlite") as con:
        rows = con.execute(
            """select kernel, bool_and(muted), list(distinct acknowledged), list(distinct acknowledgement), count(*)
               from regressions where verdict = 'regression' and head_version like ? group by kernel""",
            [f"%{FIRST}"],
        ).fetchall()
    by_kernel = {kernel: (muted, kinds, notes, n) for kernel, muted, kinds, notes, n in rows}
    assert by_kernel[story.acked][1:3] == (["expected"], [f"trades speed for memory (#1) (perf-oncall, run {FIRST})"])
    assert by_kernel[story.muted][0] is True and by_kernel[story.muted][3] > 0, "muted: still judged and stored"
    assert by_kernel[story.alerted][:3] == (False, [None], [None])


def test_triage_survives_refreshes_and_a_killed_one_and_travels_in_time(story: Story) -> None:
    assert story.killed.returncode == -9, story.killed.stderr[-2000:]
    rows = triage_rows(story.root)
    assert [(a, s, t) for a, s, t, *_ in rows] == [("mute", "kernel", story.muted), ("ack", "kernel", story.acked)]
    code, printed = cli(
        "sql", "--warehouse", str(story.root), "--as-of", str(story.before_ack), "--format", "csv",
        "select action from triage_event order by recorded_at",
    )  # fmt: skip
    assert code == 0 and printed.split() == ["action", "mute"], printed
    code, printed = cli(
        "sql", "--warehouse", str(story.root), "--as-of", str(story.before_ack), "--format", "csv",
        f"select count(*) from regressions where acknowledged is not null and kernel = '{story.acked}'",
    )  # fmt: skip
    assert code == 0 and printed.split()[-1] == "0", "an older snapshot shows the triage as it was then"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["mute", "--series", "0123456789abcdef"], "unknown series '0123456789abcdef'"),
        (["mute", "--series", "not-hex"], "is not a series digest"),
        (
            ["ack", "--kernel", "rms_norm", "--run", "nosuchrun", "--kind", "infra", "--note", "x"],
            "unknown run 'nosuchrun'",
        ),
        (["threshold", "ten", "--kernel", "rms_norm"], "threshold 'ten' is not a number"),
        (["threshold", "0%", "--kernel", "rms_norm"], "out of range"),
        (["mute", "--kernel", "no_such_kernel"], "unknown kernel 'no_such_kernel'"),
        (["unmute", "--kernel", "rms_norm"], "is not muted"),
        (["annotate", "--commits", "zzz", "--note", "x"], "is not COMMIT or COMMIT..COMMIT"),
        (["annotate", "--note", "about nothing"], "name what the note is about"),
    ],
)
def test_bad_input_gets_one_line_and_writes_nothing(story: Story, args: list[str], says: str) -> None:
    before, events = snapshot(story.root), triage_rows(story.root)
    code, printed = cli(*args, "--warehouse", str(story.root))
    assert code == 1
    assert printed.strip().count("\n") == 0 and says in printed and "nothing was written" in printed, printed
    assert (snapshot(story.root), triage_rows(story.root)) == (before, events)


def test_a_kernel_threshold_judges_its_series_as_the_query_threshold_would(story: Story, tmp_path: Path) -> None:
    root = shutil.copytree(story.root, tmp_path / "warehouse")
    base = runs(story.mirror)[-3]
    code, said = cli(
        "threshold", "150%", "--kernel", story.alerted, "--note", "a doubling is noise here", "--warehouse", str(root)
    )
    assert code == 0, said
    with open_views(root / "catalog.sqlite") as con:
        own = dict(con.execute("select series_digest, verdict from compare_runs(?, ?)", [base, FIRST]).fetchall())
        at_150 = dict(
            con.execute(
                "select series_digest, verdict from compare_runs(?, ?, threshold := 1.5) where kernel = ?",
                [base, FIRST, story.alerted],
            ).fetchall()
        )
        default = dict(
            con.execute(
                "select series_digest, verdict from compare_runs(?, ?) where kernel <> ?", [base, FIRST, story.alerted]
            ).fetchall()
        )
    assert {d: own[d] for d in at_150} == at_150 and "regression" not in at_150.values()
    assert {d: own[d] for d in default} == default, "other kernels keep the query's threshold"
    assert cli("threshold", "default", "--kernel", story.alerted, "--warehouse", str(root))[0] == 0
    with open_views(root / "catalog.sqlite") as con:
        back = con.execute(
            "select count(*) from compare_runs(?, ?) where kernel = ? and verdict = 'regression'",
            [base, FIRST, story.alerted],
        ).fetchone()[0]
    assert back > 0


def test_annotations_reach_the_comparisons_that_span_them(story: Story, tmp_path: Path) -> None:
    root = shutil.copytree(story.root, tmp_path / "warehouse")
    base = runs(story.mirror)[-3]
    assert (
        cli("annotate", "--run", FIRST, "--note", "runner moved to H200", "--by", "infra", "--warehouse", str(root))[0]
        == 0
    )
    assert (
        cli(
            "annotate", "--kernel", story.alerted, "--note", "rewritten in #42", "--by", "dev", "--warehouse", str(root)
        )[0]
        == 0
    )
    with open_views(root / "catalog.sqlite") as con:
        spanning = con.execute("select kernel, annotations from compare_runs(?, ?)", [base, FIRST]).fetchall()
        after = con.execute("select kernel, annotations from compare_runs(?, ?)", [FIRST, SECOND]).fetchall()
    run_note = f"runner moved to H200 (infra, run {FIRST})"
    kernel_note = "rewritten in #42 (dev)"
    assert all(notes[0] == run_note for _, notes in spanning)
    assert all((kernel_note in notes) == (kernel == story.alerted) for kernel, notes in spanning)
    assert all(notes == ([kernel_note] if kernel == story.alerted else []) for kernel, notes in after)


def test_a_confirmed_regression_opens_or_updates_one_github_issue_per_kernel_and_pass(story: Story) -> None:
    modes = _flagged_modes(story.root, story.mirror, story.alerted)
    titles = [f"Benchmark regression: {story.alerted} {mode}" for mode in modes]
    ours = [
        i for i in story.issues if i["title"].split(": ")[1].split()[0] in (story.acked, story.alerted, story.muted)
    ]
    assert sorted(i["title"] for i in ours) == sorted(titles), "acknowledged and muted kernels get none"
    seeded = next(i for i in ours if i["number"] == 1000)
    assert len(seeded["comments"]) == 1 and "labels" not in seeded, "the open issue is updated, not doubled"
    for issue in ours:
        text = issue["body"] if issue["number"] != 1000 else issue["comments"][0]
        assert f"Run {FIRST} against" in text and f"**{story.alerted}**" in text and "confirmed" in text
        assert issue.get("labels", ["benchmark-regression"]) == ["benchmark-regression"]
    assert set(story.tokens) == {"Bearer issue-token"}


def test_a_series_and_a_sweep_are_named_by_digest_prefix(story: Story, tmp_path: Path) -> None:
    root = shutil.copytree(story.root, tmp_path / "warehouse")
    base = runs(story.mirror)[runs(story.mirror).index(FIRST) - 1]
    with open_views(root / "catalog.sqlite") as con:
        digest, sweep_key, sweep_size = con.execute(
            """select s.series_digest, s.sweep_key,
                      (select count(*) from dim_series as o where o.sweep_key = s.sweep_key)
               from dim_series as s where s.kernel = ? and s.is_liger and s.metric = 'speed'
               order by s.series_digest limit 1""",
            [story.alerted],
        ).fetchone()
    hex_part = digest.removeprefix("sha256:")
    assert cli("mute", "--series", hex_part[:10], "--warehouse", str(root))[0] == 0
    assert (
        cli(
            "ack",
            "--series",
            digest,
            "--run",
            FIRST,
            "--kind",
            "invalid",
            "--note",
            "bad run",
            "--warehouse",
            str(root),
        )[0]
        == 0
    )
    with open_views(root / "catalog.sqlite") as con:
        rows = con.execute(
            "select series_digest, muted, acknowledged from compare_runs(?, ?) where kernel = ?",
            [base, FIRST, story.alerted],
        ).fetchall()
    assert {d for d, muted, _ in rows if muted} == {digest}
    assert {d for d, _, kind in rows if kind == "invalid"} == {digest}
    assert cli("mute", "--sweep", f"sha256:{hex_part[:8]}", "--warehouse", str(root))[0] == 0
    with open_views(root / "catalog.sqlite") as con:
        reached = con.execute(
            "select count(*) from series_triage join dim_series using (series_digest) where muted and sweep_key = ?",
            [sweep_key],
        ).fetchone()[0]
        state = con.execute("select scope, target, series from triage_state order by scope").fetchall()
    assert reached == sweep_size
    assert ("series", digest, 1) in state and ("sweep", sweep_key, sweep_size) in state
