"""The benchmark report: built by ``liger-warehouse report`` from the session warehouse (read-only)
and by the ``liger_report`` asset of the refresh that built it.

A reader opens every page with no network: no element loads a URL, the one script a page loads
(Vega, Vega-Lite and vega-embed, written once per report) is a file of the report named by a
relative path, and every chart spec parses and carries its data. The PNG renders are real images
of a useful size.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from typer.testing import CliRunner

from liger_warehouse.cli import app
from liger_warehouse.report.png import _chunks, compact
from tests.conftest import env
from tests.plain_duckdb import open_views

pytestmark = pytest.mark.slow

SECTIONS = ("open", "speedup", "p50", "regressions", "change-points", "noise")
# An element that would make the browser fetch something at view time.
EXTERNAL = re.compile(
    r"<(script|link|img|iframe|object|embed|source)\b[^>]*\b(src|href|data)\s*=\s*[\"']?(https?:)?//", re.I
)
SPEC = re.compile(r'<script type="application/json" id="spec-([^"]+)">(.*?)</script>', re.S)
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']?([^\"'\s>]+)", re.I)
OPEN_SQL = """
select count(*) from regressions
where verdict = 'regression' and acknowledged is null and not muted and coalesce(confirmation, '') <> 'retracted'
"""


def assert_offline(path: Path, root: Path) -> None:
    """The page at ``path`` of the report in ``root`` opens with no network: no element loads a URL,
    and every script it loads is a relative path to a file of the report that loads none either
    and that defines ``vegaEmbed`` before the page's charts call it."""
    text = path.read_text(encoding="utf-8")
    assert EXTERNAL.findall(text) == [] and "@import" not in text, path
    assert "cdn.jsdelivr" not in text and "unpkg.com" not in text, path
    sources = SCRIPT_SRC.findall(text)
    assert sources, path
    scripts = []
    for src in sources:
        parts = urlsplit(src)
        assert not parts.scheme and not parts.netloc and not src.startswith("/"), (path, src)
        target = (path.parent / unquote(parts.path)).resolve()
        assert target.is_file() and target.is_relative_to(root.resolve()), (path, src)
        scripts.append(target.read_text(encoding="utf-8"))
    for script in scripts:
        assert EXTERNAL.findall(script) == [], path
        assert "cdn.jsdelivr" not in script and "unpkg.com" not in script, path
    # The libraries come from the report's file, not inlined into each page.
    assert any("window.vegaEmbed=" in script.replace(" ", "") for script in scripts), path
    assert "window.vegaEmbed=" not in text.replace(" ", ""), path
    assert text.index("<script src=") < text.index("vegaEmbed(el"), path


@pytest.fixture(scope="module")
def built(mirror_warehouse, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    with env(LIGER_WAREHOUSE_DIR=None):
        result = CliRunner().invoke(app, ["report", "--out", str(out), "--warehouse", str(mirror_warehouse.root)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def page(built: Path) -> str:
    return (built / "index.html").read_text(encoding="utf-8")


def _specs(page: str) -> dict[str, dict]:
    return {chart_id: json.loads(text) for chart_id, text in SPEC.findall(page)}


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    return struct.unpack(">II", data[16:24])


def test_page_has_every_section(page, mirror_warehouse):
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in page
    for title in ("speedup over each baseline", "p50 across versions", "Regressions", "Change points", "too noisy"):
        assert title in page
    with open_views(mirror_warehouse.database) as con:
        kernels = [
            k
            for (k,) in con.execute(
                "select distinct kernel from version_history where build_kind = 'release' order by 1"
            ).fetchall()
        ]
        (snapshot,) = con.execute("select max(snapshot_id) from ducklake_snapshots('liger')").fetchone()
    assert f"Lake snapshot <code>{snapshot}</code>" in page
    for kernel in kernels:
        assert f">{kernel}</h3>" in page, kernel


def test_page_needs_no_network(built):
    pages = [built / "index.html", *sorted((built / "kernels").glob("*.html"))]
    assert len(pages) > 1
    for path in pages:
        assert_offline(path, built)


def test_report_writes_the_page_set_and_one_script(built, mirror_warehouse):
    with open_views(mirror_warehouse.database) as con:
        kernels = con.execute("select count(distinct kernel) from results").fetchone()[0]
    scripts = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.js"))
    assert scripts == ["vega-bundle.js"]
    assert len(list((built / "kernels").glob("*.html"))) == kernels
    assert sorted(p.name for p in built.glob("*.html")) == ["index.html"]


def test_every_chart_spec_parses_and_carries_its_data(page):
    specs = _specs(page)
    charts = re.findall(r'<div class="chart" id="chart-([^"]+)" data-chart="\1">', page)
    assert len(charts) >= 4 and sorted(charts) == sorted(specs)
    for chart_id, spec in specs.items():
        assert "vega-lite" in spec["$schema"], chart_id
        assert all(rows for rows in spec["datasets"].values()), chart_id
        assert "url" not in spec.get("data", {}), chart_id
    assert {"speedup", "regressions", "change-points", "noise"} <= set(specs)
    speedup = specs["speedup"]["datasets"]["points"]
    assert all(r["speedup"] > 0 and r["min_speedup"] <= r["speedup"] <= r["max_speedup"] + 1e-9 for r in speedup)


def test_tables_list_the_regressions_and_change_points(page, mirror_warehouse):
    liger = "starts_with(provider, 'liger')"
    with open_views(mirror_warehouse.database) as con:
        totals = [
            con.execute(OPEN_SQL).fetchone()[0],
            con.execute(f"select count(*) from regressions where {liger} and verdict = 'regression'").fetchone()[0],
            con.execute(f"select count(*) from change_points where {liger}").fetchone()[0],
            con.execute(
                "select count(*) from series_noise where is_liger and metric = 'speed' and history >= 5 "
                "and detectable_change > 0.25"
            ).fetchone()[0],
        ]
    tables = re.findall(r"Showing (?:the first (\d+) of|all) (\d+) rows.*?<tbody>(.*?)</tbody>", page, re.S)
    assert [int(total) for _, total, _ in tables] == totals
    for (shown, total, body), limit in zip(tables, (500, 100, 100, 100), strict=True):
        assert body.count("<tr>") == int(shown or total) == min(int(total), limit)
    for view in ("regressions", "change_points"):
        assert f"from {view} where starts_with(provider, &#x27;liger&#x27;)" in page
    assert '<td class="regression">' in tables[2][2]


def test_pngs_are_readable_images(built):
    pngs = sorted(built.glob("*.png"))
    assert {p.stem for p in pngs} >= {"speedup", "regressions", "change-points"}
    assert any(p.stem.startswith("p50-") for p in pngs)
    for path in pngs:
        width, height = _png_size(path.read_bytes())
        assert width >= 800 and height >= 400, (path.name, width, height)
        assert path.stat().st_size > 10_000, path.name


def test_compact_png_keeps_the_pixels(built):
    data = (built / "regressions.png").read_bytes()
    again = compact(data)
    pixels = [zlib.decompress(b"".join(body for kind, body in _chunks(d) if kind == b"IDAT")) for d in (data, again)]
    assert pixels[0] == pixels[1]
    assert _png_size(again) == _png_size(data)


def test_asset_wrote_the_report_and_attached_the_pngs(mirror_warehouse):
    events = mirror_warehouse.materializations("liger_report")
    assert len(events) == 1
    metadata = events[0].metadata
    report = Path(metadata["report"].value)
    assert report.is_file() and report.parent.name == str(metadata["snapshot"].value)
    assert report.parent.parent == mirror_warehouse.root / "reports"
    charts = {k: v for k, v in metadata.items() if k.startswith("chart/")}
    assert "chart/speedup" in charts
    for value in charts.values():
        assert value.value.startswith("![") and "(data:image/png;base64," in value.value
    for key, value in metadata.items():
        if key.startswith("png/"):
            assert Path(value.value).is_file(), key
