"""The report as a heads-up display: a page per kernel beside the index, and the open regressions
on the index.

Each kernel page opens offline like the index (both load the report's one script by a relative
path), draws the kernel's p50 per gh-pages run and marks
the runs the views name: its change points (``change_points``), the environment shifts
(``environment_shifts``), and what people acknowledged or annotated (``triage_reach``). A triage
write moves a regression out of the open list and puts its note on the kernel's page; a flag the
later builds retracted is not open either. Every
expectation is read from the views with plain SQL, never from the report code.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.report.build import Report, build_report
from liger_warehouse.report.publish import publish_report
from tests.conftest import env
from tests.plain_duckdb import open_views
from tests.test_report import SPEC, assert_offline

pytestmark = pytest.mark.slow

OPEN_SQL = """
select kernel, left(regexp_replace(series_digest, '^sha256:', ''), 12) as series, head_version
from regressions
where verdict = 'regression' and acknowledged is null and not muted and coalesce(confirmation, '') <> 'retracted'
"""
ACK_NOTE = "hud check: expected slowdown"
RUN_NOTE = "hud check: a note on one run"
WHOLE_NOTE = "hud check: a note on the whole history"
TAG = re.compile(r"<[^>]+>")


def _short(digest: str) -> str:
    return digest.removeprefix("sha256:")[:12]


def _specs(text: str) -> dict[str, dict]:
    return {chart_id: json.loads(spec) for chart_id, spec in SPEC.findall(text)}


def _history(path: Path) -> dict:
    """The datasets of a kernel page's chart, each point and change point with its series' labels."""
    data = _specs(path.read_text(encoding="utf-8"))["history"]["datasets"]
    series = {s["s"]: s for s in data["series"]}
    for name in ("points", "changes"):
        data[name] = [{**series[row["s"]], **row} for row in data[name]]
    return data


def _body(text: str) -> str:
    """The page without its scripts: what a reader sees as text and tables."""
    return re.sub(r"<script\b.*?</script>", "", text, flags=re.S)


def _table_rows(section: str) -> list[dict]:
    columns = [html.unescape(c) for c in re.findall(r"<th>(.*?)</th>", section)]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", section, re.S):
        cells = [html.unescape(TAG.sub("", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        if cells:
            rows.append(dict(zip(columns, cells, strict=True)))
    return rows


def _section(text: str, anchor: str) -> str:
    start = text.index(f'<section id="{anchor}">')
    return text[start : text.index("</section>", start)]


def _kernel_href(kernel: str) -> str:
    return f'href="kernels/{html.escape(quote(kernel, safe="="))}.html"'


@pytest.fixture(scope="module")
def published(mirror_warehouse) -> Path:
    """The report the outputs job wrote into the warehouse (``reports/<snapshot>/``)."""
    with open_views(mirror_warehouse.database) as con:
        (snapshot,) = con.execute("select max(snapshot_id) from ducklake_snapshots('liger')").fetchone()
    return mirror_warehouse.root / "reports" / str(snapshot)


@pytest.fixture(scope="module")
def kernels(mirror_warehouse) -> list[str]:
    with open_views(mirror_warehouse.database) as con:
        return [k for (k,) in con.execute("select distinct kernel from results order by kernel").fetchall()]


def test_every_kernel_with_results_has_an_offline_page(published, kernels, mirror_warehouse):
    index = (published / "index.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in (published / "kernels").iterdir()) == sorted(f"{k}.html" for k in kernels)
    assert any("=" in k for k in kernels), "the fixture has a kernel whose name holds '='"
    assert_offline(published / "index.html", published)
    for kernel in kernels:
        assert_offline(published / "kernels" / f"{kernel}.html", published)
        page = (published / "kernels" / f"{kernel}.html").read_text(encoding="utf-8")
        specs = _specs(page)
        charts = re.findall(r'<div class="chart" id="chart-([^"]+)" data-chart="\1">', page)
        assert charts and sorted(charts) == sorted(specs), kernel
        for chart_id, spec in specs.items():
            assert "vega-lite" in spec["$schema"], (kernel, chart_id)
            assert "url" not in json.dumps(spec.get("data", {})), (kernel, chart_id)
        assert f"<code>{html.escape(kernel)}</code></h1>" in page
        assert 'href="../index.html"' in page
        assert _kernel_href(kernel) in index, kernel
    events = mirror_warehouse.materializations("liger_report")
    metadata = events[0].metadata
    assert metadata["kernel_pages"].value == len(kernels)
    with open_views(mirror_warehouse.database) as con:
        assert metadata["open_regressions"].value == len(con.execute(OPEN_SQL).fetchall())


def test_kernel_chart_holds_its_run_history(published, mirror_warehouse):
    with open_views(mirror_warehouse.database) as con:
        rows = con.execute("select kernel, series_digest, run, gpu, workload, p50 from run_history").fetchall()
    expected: dict[str, dict] = {}
    for kernel, digest, run, gpu, workload, p50 in rows:
        expected.setdefault(kernel, {})[_short(digest), run, gpu, workload] = p50
    assert expected
    for kernel, points in expected.items():
        data = _history(published / "kernels" / f"{kernel}.html")
        got = {(p["digest"], p["run"], p["gpu"], p["workload"]): p["p50"] for p in data["points"]}
        assert len(got) == len(data["points"]) and got.keys() == points.keys(), kernel
        assert all(got[k] == pytest.approx(v, rel=1e-3) for k, v in points.items()), kernel


def test_kernel_chart_marks_its_change_points_and_no_shift_the_view_lacks(published, mirror_warehouse):
    with open_views(mirror_warehouse.database) as con:
        changes = con.execute(
            """select c.kernel, c.series_digest, c.run, c.verdict, h.p50
               from change_points as c join run_history as h using (series_digest, run)"""
        ).fetchall()
        shifts = {r for (r,) in con.execute("select run from environment_shifts").fetchall()}
        kernels = [k for (k,) in con.execute("select distinct kernel from run_history").fetchall()]
    expected: dict[str, set] = {k: set() for k in kernels}
    for kernel, digest, run, verdict, _ in changes:
        expected[kernel].add((_short(digest), run, verdict))
    assert any(expected.values()), "the fixture has change points"
    p50 = {(_short(d), r): v for _, d, r, _, v in changes}
    for kernel in kernels:
        data = _history(published / "kernels" / f"{kernel}.html")
        assert {(c["digest"], c["run"], c["verdict"]) for c in data["changes"]} == expected[kernel], kernel
        for c in data["changes"]:  # drawn on its series' point of that run
            assert c["p50"] == pytest.approx(p50[c["digest"], c["run"]], rel=1e-3), kernel
        assert {m["run"] for m in data["marks"] if m["kind"] == "environment"} <= shifts, kernel


def test_kernel_chart_marks_the_environment_shifts(mirror_warehouse, tmp_path):
    """The fixture's runs hold no shift, so a reader where ``environment_shifts`` names one builds
    the report: every kernel measured in that run marks it on each of its GPUs."""
    with open_views(mirror_warehouse.database) as con:
        run, previous, rank = con.execute(
            "select run, previous_run, upload_rank from run_code_order order by upload_rank limit 1 offset 4"
        ).fetchone()
        (moved,) = con.execute("select min(kernel) from run_history where run = ?", [run]).fetchone()
        con.execute(
            f"""create temp view environment_shifts as
                select '{run}' as run, '{previous}' as previous_run, {rank}::bigint as upload_rank,
                       'slower' as direction, 40::bigint as moved, 400::bigint as series, 0.1 as moved_share,
                       1::bigint as kernels_moved, 20::bigint as kernels, ['{moved}'] as moved_kernels"""
        )
        gpus: dict[str, set] = {}
        for kernel, gpu in con.execute("select distinct kernel, gpu from run_history").fetchall():
            gpus.setdefault(kernel, set()).add(gpu)
        measured = {
            k for (k,) in con.execute("select distinct kernel from run_history where run = ?", [run]).fetchall()
        }
        build_report(con, tmp_path, png=False)
    assert measured
    for kernel, kernel_gpus in gpus.items():
        marks = [m for m in _history(tmp_path / "kernels" / f"{kernel}.html")["marks"] if m["kind"] == "environment"]
        if kernel not in measured:
            assert marks == [], kernel
            continue
        assert {m["run"] for m in marks} == {run}, kernel
        assert sorted(m["gpu"] for m in marks) == sorted(kernel_gpus), kernel
        assert all(("moved with it" in m["note"]) == (kernel == moved) for m in marks), kernel


def test_retracted_regressions_are_not_open(published, mirror_warehouse):
    with open_views(mirror_warehouse.database) as con:
        opened = set(con.execute(OPEN_SQL).fetchall())
        retracted = set(
            con.execute(
                """select kernel, left(regexp_replace(series_digest, '^sha256:', ''), 12), head_version
                   from regressions where verdict = 'regression' and acknowledged is null and not muted
                   and confirmation = 'retracted'"""
            ).fetchall()
        )
    assert retracted, "the fixture has a regression the later builds retracted"
    section = _section((published / "index.html").read_text(encoding="utf-8"), "open")
    rows = _table_rows(section)
    assert rows and all(r["confirmation"] != "retracted" for r in rows)
    assert not {(r["kernel"], r["series"], r["head_version"]) for r in rows} & retracted
    assert re.search(rf"<b>{len(opened)}</b> open regressions", section)


class _Recorder:
    """A storage that keeps the order of its writes."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def write_bytes(self, key: str, data: bytes) -> None:
        self.keys.append(key)


def test_publish_uploads_the_script_first_and_the_index_last(tmp_path):
    files = {name: tmp_path / name for name in ("index.html", "vega-bundle.js", "speedup.png", "kernels/rope.html")}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    report = Report(
        files["index.html"],
        7,
        1,
        files["vega-bundle.js"],
        pngs={"speedup": files["speedup.png"]},
        kernel_pages={"rope": files["kernels/rope.html"]},
    )
    storage = _Recorder()
    keys = publish_report(storage, report)
    assert storage.keys[0] == keys["script"] == "reports/7/vega-bundle.js"
    assert storage.keys[-1] == keys["index"] == "reports/7/index.html"
    assert sorted(storage.keys) == sorted(f"reports/7/{name}" for name in files)
    assert keys["kernels/rope"] == "reports/7/kernels/rope.html"


@dataclass
class Triaged:
    root: Path
    report: Path
    kernel: str
    acked_run: str
    noted_run: str
    before: set  # the open regressions before the triage writes


def _cli(*args: str) -> None:
    with env(LIGER_WAREHOUSE_DIR=None):
        result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def triaged(mirror_warehouse, tmp_path_factory: pytest.TempPathFactory) -> Triaged:
    """A copy of the warehouse with an acknowledgement and two annotations, and its report."""
    root = tmp_path_factory.mktemp("triaged") / "warehouse"
    shutil.copytree(mirror_warehouse.root, root, ignore=shutil.ignore_patterns("reports", "*.lock"))
    with open_views(root / "catalog.sqlite") as con:
        before = set(con.execute(OPEN_SQL).fetchall())
        kernel, acked_run = con.execute(
            """select r.kernel, b.last_run from regressions as r join dim_build as b on b.build = r.head_version
               where r.verdict = 'regression' and r.acknowledged is null and not r.muted and b.last_run is not null
                 and coalesce(r.confirmation, '') <> 'retracted'
               group by all order by count(*) desc, r.kernel, b.last_run limit 1"""
        ).fetchone()
        (noted_run,) = con.execute(
            """select h.run from run_history as h join run_code_order as o using (run)
               where h.kernel = ? and h.run <> ? order by o.upload_rank limit 1""",
            [kernel, acked_run],
        ).fetchone()
    where = ["--warehouse", str(root), "--by", "tester"]
    _cli("ack", *where, "--run", acked_run, "--kind", "expected", "--note", ACK_NOTE, "--kernel", kernel)
    _cli("annotate", *where, "--run", noted_run, "--note", RUN_NOTE, "--kernel", kernel)
    _cli("annotate", *where, "--note", WHOLE_NOTE, "--kernel", kernel)
    report = tmp_path_factory.mktemp("triaged-report")
    _cli("report", "--out", str(report), "--warehouse", str(root), "--no-png")
    return Triaged(root, report, kernel, acked_run, noted_run, before)


def test_acknowledged_regressions_leave_the_open_list(triaged):
    with open_views(triaged.root / "catalog.sqlite") as con:
        after = set(con.execute(OPEN_SQL).fetchall())
        acked = set(
            con.execute(
                """select kernel, left(regexp_replace(series_digest, '^sha256:', ''), 12), head_version
                   from regressions where verdict = 'regression' and acknowledged = 'expected'
                   and starts_with(acknowledgement, ?) and coalesce(confirmation, '') <> 'retracted'""",
                [ACK_NOTE],
            ).fetchall()
        )
    assert acked and acked <= triaged.before and not acked & after
    assert all(kernel == triaged.kernel for kernel, _, _ in acked)
    index = (triaged.report / "index.html").read_text(encoding="utf-8")
    section = _section(index, "open")
    listed = {(r["kernel"], r["series"], r["head_version"]) for r in _table_rows(section)}
    assert re.search(rf"Showing (?:the first \d+ of|all) {len(after)} rows", section)
    assert listed <= after and not listed & acked
    assert len(listed) == min(len(after), 500)
    table = section[section.index('<div class="scroll">') :]
    links = re.findall(r'<tr><td><a href="kernels/([^"]+)\.html">([^<]+)</a></td>', table)
    assert len(links) == table.count("<tr><td") and all(unquote(h) == html.unescape(k) for h, k in links)


def test_kernel_page_shows_the_acknowledgement_and_the_annotations(triaged):
    page = (triaged.report / "kernels" / f"{triaged.kernel}.html").read_text(encoding="utf-8")
    with open_views(triaged.root / "catalog.sqlite") as con:
        acks = con.execute(
            """select distinct a.run, a.kind, a.note
               from (select unnest(acks) as a from triage_reach where scope = 'kernel' and target = ?)""",
            [triaged.kernel],
        ).fetchall()
        notes = [
            n
            for (n,) in con.execute(
                """select distinct n.note
                   from (select unnest(notes) as n from triage_reach where scope = 'kernel' and target = ?)""",
                [triaged.kernel],
            ).fetchall()
        ]
        acked_rows = con.execute(
            """select count(*) from regressions where kernel = ? and verdict = 'regression'
               and acknowledged = 'expected' and starts_with(acknowledgement, ?)""",
            [triaged.kernel, ACK_NOTE],
        ).fetchone()[0]
    assert acks == [(triaged.acked_run, "expected", acks[0][2])] and acks[0][2].startswith(ACK_NOTE)
    marks = _history(triaged.report / "kernels" / f"{triaged.kernel}.html")["marks"]
    assert {(m["run"], m["note"]) for m in marks if m["kind"] == "acknowledged"} == {(triaged.acked_run, acks[0][2])}
    run_note = next(n for n in notes if n.startswith(RUN_NOTE))
    whole_note = next(n for n in notes if n.startswith(WHOLE_NOTE))
    assert {(m["run"], m["note"]) for m in marks if m["kind"] == "annotation"} == {(triaged.noted_run, run_note)}
    body = _body(page)
    assert html.escape(whole_note) in _section(body, "triage")
    rows = _table_rows(_section(body, "regressions"))
    assert sum(r["acknowledgement"] == acks[0][2] and r["acknowledged"] == "expected" for r in rows) == min(
        acked_rows, 100
    )
    assert acked_rows > 0
