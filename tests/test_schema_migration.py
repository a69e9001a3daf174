"""Issue 12, point 5: a warehouse built by the schema-1 code is migrated by its next refresh.

The schema-1 warehouse is built by the code of the commit before ``SCHEMA_VERSION = 2`` came in,
taken from git (``git archive``) and run in a subprocess against the same loopback GitHub. The
refresh with today's code must publish a new generation holding every result, with the digests
changed exactly as docs/SCHEMA.md says (recomputed here from the documented identities), record
old -> new in ``digest_migration``, leave the old generation untouched, and still rebuild every
upstream file byte for byte."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from liger_warehouse.build.ingest import SchemaOutdated
from liger_warehouse.export import liger_csv
from liger_warehouse.export.records import connect
from liger_warehouse.imports.kernelindex import stage_import
from liger_warehouse.store.generations import Generation, GenerationStore
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from tests import expected
from tests.conftest import FAST_RETRIES, MIRROR, env, refresh
from tests.old_code import BUILD, REPO, extract, git
from tests.plain_duckdb import open_views
from tests.reliability.published import (
    Published,
    assert_still_there,
    contents,
    dagster_home,
    published,
    step_failures,
)
from tests.schema_identities import expected_new, stem_of

pytestmark = pytest.mark.slow

DOCS = REPO / "docs" / "SCHEMA.md"
DIGESTS = ("protocol", "implementation", "series", "workload", "environment")
CLI = "from pipelines.cli import app; app()"


@pytest.fixture(scope="module")
def schema_one_code(tmp_path_factory) -> Path:
    """The project as it was just before schema version 2."""
    # The oldest commit that changed the count is the one that introduced it: the move of
    # tables.py into liger_warehouse/model/ changed it again, later.
    changed = git("log", "--format=%H", "-S", "SCHEMA_VERSION = 2", "--", "pipelines/tables.py").split()
    if not changed:
        pytest.skip("schema version 2 is not committed yet")
    code = extract(f"{changed[-1].decode()}^", tmp_path_factory.mktemp("schema-one-code"))
    assert "SCHEMA_VERSION" not in (code / "pipelines" / "tables.py").read_text()
    return code


def _old(code: Path, args: list[str], fake_github, root: Path, **extra: str) -> None:
    """Run the schema-1 code (first on the path) in a subprocess; it must succeed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIGER_WAREHOUSE")}
    env.update(
        PYTHONPATH=str(code),
        LIGER_WAREHOUSE_DIR=str(root),
        LIGER_WAREHOUSE_UPSTREAM="github:linkedin/Liger-Kernel",
        LIGER_WAREHOUSE_GITHUB_API=fake_github.api_base,
        LIGER_WAREHOUSE_GITHUB_RAW=fake_github.raw_base,
        DAGSTER_HOME=str(root.parent / "dagster-home"),
        COLUMNS="1000",
        **FAST_RETRIES,
        **extra,
    )
    Path(env["DAGSTER_HOME"]).mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, *args], cwd=code, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


def _schema_one(code: Path, tmp_path_factory, fake) -> Path:
    root = tmp_path_factory.mktemp("schema-one") / "warehouse"
    _old(code, ["-c", BUILD], fake, root)
    gens = GenerationStore(Storage(root))
    assert gens.current().schema_version == 1
    return root


@pytest.fixture(scope="module")
def schema_one(schema_one_code, tmp_path_factory, fake_github) -> Path:
    """A warehouse of the whole mirror built by the schema-1 code; tests work on copies."""
    return _schema_one(schema_one_code, tmp_path_factory, fake_github)


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _results(root: Path, gen_id: str) -> dict[str, dict]:
    """result_digest -> the result of generation ``gen_id`` with its dimension rows' fields."""
    gens = GenerationStore(Storage(root))
    gen = gens.load(gen_id)
    con = connect(gens, gen)
    try:
        cursor = con.execute(
            "select f.*, i.provider, i.backend, p.harness from fact_result f "
            "join dim_implementation i using (implementation_digest) join dim_protocol p using (protocol_digest)"
        )
        names = [d[0] for d in cursor.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in cursor.fetchall()}
    finally:
        con.close()


def _timed_passes(root: Path, gen_id: str) -> dict[str, str]:
    gens = GenerationStore(Storage(root))
    rows = gens.read_table(gens.load(gen_id), "dim_protocol", ["protocol_digest", "timed_pass"]).to_pylist()
    return {r["protocol_digest"]: r["timed_pass"] for r in rows}


@dataclass
class Migrated:
    root: Path
    before: Published  # the schema-1 generation
    old: dict[str, dict]  # its results
    gen: Generation  # the generation the refresh published
    run: dg.ExecuteInProcessResult  # the refresh


def _migrated(schema_one: Path, tmp_path_factory, fake) -> Migrated:
    root = _copy(schema_one, tmp_path_factory.mktemp("migrated") / "warehouse")
    gens = GenerationStore(Storage(root))
    before = published(root)
    old = _results(root, before.current)
    passes = _timed_passes(root, before.current)
    for result in old.values():
        result["_timed_pass"] = passes[result["protocol_digest"]]
    done = refresh(root, fake)
    assert done.result.success, step_failures(done.result)
    return Migrated(root, before, old, gens.current(), done.result)


@pytest.fixture(scope="module")
def migrated(schema_one, tmp_path_factory, fake_github) -> Migrated:
    """A copy of the schema-1 warehouse, refreshed once by today's code; with what it was before."""
    return _migrated(schema_one, tmp_path_factory, fake_github)


@pytest.fixture(scope="module")
def full_migrated(schema_one_code, tmp_path_factory, full_fake_github) -> Migrated:
    """The same from the whole snapshot, whose figures docs/SCHEMA.md gives (the larger tier)."""
    return _migrated(
        _schema_one(schema_one_code, tmp_path_factory, full_fake_github), tmp_path_factory, full_fake_github
    )


def test_the_refresh_publishes_a_migrated_generation_and_loses_nothing(migrated, mirror_warehouse):
    root, before, old, gen = migrated.root, migrated.before, migrated.old, migrated.gen
    assert gen.id != before.current and gen.parent == before.current and gen.schema_version == 2
    # The old generation, its manifest and every part it names are byte for byte as they were.
    assert_still_there(root, before)
    assert GenerationStore(Storage(root)).load(before.current).schema_version == 1
    new = _results(root, gen.id)
    assert new.keys() == old.keys()
    kept = ("source", "source_key", "metric", "unit", "p20", "p50", "p80", "observed_at", "liger_version")
    kept += ("first_revision_digest", "last_revision_digest", "is_current", "row_text")
    assert all(tuple(new[d][c] for c in kept) == tuple(old[d][c] for c in kept) for d in old)
    # Migrated, the warehouse holds exactly what a schema-2 build of the same upstream holds.
    mine, fresh = contents(root), contents(mirror_warehouse.root)
    assert mine.pop("digest_migration") and not fresh.pop("digest_migration", [])
    assert mine == fresh
    # The run says it migrated; relabelled series are not taken for new regressions.
    (published_event,) = [
        e for e in migrated.run.get_asset_materialization_events() if e.asset_key.path == ["published_generation"]
    ]
    metadata = published_event.materialization.metadata
    assert metadata["migrated_from_schema_version"].value == 1 and metadata["schema_version"].value == 2
    assert metadata["results_relabelled"].value == gen.summary["migration"]["results_relabelled"] > 0
    (watch,) = [e for e in migrated.run.get_asset_check_evaluations() if e.check_name == "no_new_regressions"]
    # A step is new when its head build is; a schema-1 generation has no builds to compare with.
    assert watch.passed and "no builds to compare with" in watch.metadata["note"].value


def _checked_figures(migrated: Migrated) -> dict[str, int]:
    """Every result's digests as docs/SCHEMA.md's identities give them, and the migration's
    summary; returns the figures counted on the way."""
    root, old, gen = migrated.root, migrated.old, migrated.gen
    new = _results(root, gen.id)
    changed: Counter = Counter()
    olds: dict[str, set] = {k: set() for k in DIGESTS}
    news: dict[str, set] = {k: set() for k in DIGESTS}
    for digest, was in old.items():
        now, want = new[digest], expected_new(was)
        assert (now["workload_digest"], now["environment_digest"]) == (
            was["workload_digest"],
            was["environment_digest"],
        )
        assert {k: now[f"{k}_digest"] for k in want} == want, was["row_text"]
        assert (now["harness"], now["backend"]) == (
            expected.harness(stem_of(was)),
            expected.backend(stem_of(was), was["provider"]),
        )
        for kind in DIGESTS:
            if now[f"{kind}_digest"] != was[f"{kind}_digest"]:
                changed[kind] += 1
                olds[kind].add(was[f"{kind}_digest"])
                news[kind].add(now[f"{kind}_digest"])
    files = Counter(stem_of(was) or "gh-pages" for was in old.values() if not was["provider"].startswith("liger"))
    # Counted independently, these are the figures docs/SCHEMA.md gives for the mirror.
    figures = {
        "results": len(old),
        "protocol": changed["protocol"],
        "implementation": changed["implementation"],
        "series": changed["series"],
        "cutedsl": sum(1 for was in old.values() if stem_of(was) == "all_benchmark_data_cutedsl"),
        "cutile": sum(1 for was in old.values() if stem_of(was) == "all_benchmark_data_cutile"),
        **{f"baselines {f}": n for f, n in files.items()},
        **{f"{k} old": len(olds[k]) for k in ("protocol", "implementation", "series")},
        **{f"{k} new": len(news[k]) for k in ("protocol", "implementation", "series")},
    }
    assert changed["workload"] == changed["environment"] == 0
    assert figures["protocol"] == figures["cutedsl"] + figures["cutile"]
    assert figures["implementation"] == sum(files.values())  # no Liger result is relabelled upstream
    summary = gen.summary["migration"]
    assert summary == {
        "from_schema_version": 1,
        "schema_version": 2,
        "results": len(old),
        "results_relabelled": len(
            [d for d in old if any(new[d][f"{k}_digest"] != old[d][f"{k}_digest"] for k in DIGESTS)]
        ),
        "digests_changed": {k: len(olds[k]) for k in DIGESTS},
    }
    return figures


def test_digests_change_exactly_as_documented(migrated):
    _checked_figures(migrated)


def test_the_whole_snapshot_digests_change_by_the_documented_figures(full_migrated):
    figures = _checked_figures(full_migrated)
    section = DOCS.read_text().split("## Schema versions")[1]
    documented = {int(n.replace(",", "")) for n in re.findall(r"\b\d{1,3}(?:,\d{3})+\b|\b\d+\b", section)}
    assert {name: n for name, n in figures.items() if n not in documented} == {}


def test_digest_migration_maps_every_changed_digest(migrated):
    root, old, gen = migrated.root, migrated.old, migrated.gen
    new = _results(root, gen.id)
    with open_views(root / "liger.duckdb") as con:
        rows = con.execute("select kind, old_digest, new_digest, schema_version from digest_migration").fetchall()
    assert {r[3] for r in rows} == {2} and len(set(rows)) == len(rows)
    table = {(kind, o, n) for kind, o, n, _ in rows}
    pairs = {(k, old[d][f"{k}_digest"], new[d][f"{k}_digest"]) for d in old for k in DIGESTS}
    moved = {(k, o) for k, o, n in pairs if o != n}
    # Every old digest that changed, with every digest it became (itself where results kept it).
    assert table == {(k, o, n) for k, o, n in pairs if (k, o) in moved}
    # One of the 20 mixed series: its old digest leads to two, one per file.
    splits = Counter((k, o) for k, o, _ in table if k == "series")
    assert sum(1 for n in splits.values() if n == 2) == 20 and max(splits.values()) == 2


def test_time_travel_still_rebuilds_every_upstream_file(migrated, tmp_path):
    root = migrated.root
    gens = GenerationStore(Storage(root))
    con = connect(gens, gens.current())
    shas = {}
    for gz in MIRROR.glob("raw/*/benchmark/data/*.csv.gz"):
        sha, path = gz.relative_to(MIRROR).parts[1], str(Path(*gz.relative_to(MIRROR).parts[2:]))[:-3]
        rebuilt = liger_csv.rebuild(con, liger_csv.find_revision(con, path, sha))
        shas[gz] = rebuilt == gzip.decompress(gz.read_bytes())
    for gz in MIRROR.glob("gh-pages/benchmarks/*/benchmark.csv.gz"):
        shas[gz] = liger_csv.rebuild(con, liger_csv.find_run(con, gz.parent.name)) == gzip.decompress(gz.read_bytes())
    con.close()
    assert all(shas.values()) and len(shas) == len(list(MIRROR.glob("**/*.csv.gz")))
    # And through the command line, for the cuTile file as of its oldest commit.
    from typer.testing import CliRunner

    from liger_warehouse.cli import app

    first = json.loads((MIRROR / "commits" / "all_benchmark_data_cutile.json").read_text())[-1]["sha"]
    path = "benchmark/data/all_benchmark_data_cutile.csv"
    out = tmp_path / "cutile.csv"
    args = ["export", "liger-csv", "-w", str(root), "--path", path, "--as-of", first[:7], "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == gzip.decompress((MIRROR / "raw" / first / f"{path}.gz").read_bytes())


def test_an_import_made_before_keeps_following_its_originals(schema_one, schema_one_code, tmp_path, fake_github):
    """An export of the schema-1 warehouse imported by the schema-1 code: after the migration
    its results have their originals' new digests, cuTile and CuTe DSL liger_triton rows too."""
    root = _copy(schema_one, tmp_path / "warehouse")
    out = tmp_path / "export"
    gpu = ["--kernel", "cross_entropy", "--gpu", "NVIDIA B200"]
    export = ["export", "kernelindex", "-w", str(root), *gpu, "--out", str(out)]
    _old(schema_one_code, ["-c", CLI, *export], fake_github, root)
    (file,) = out.glob("*.ndjson")
    _old(
        schema_one_code,
        ["-c", CLI, "import", "kernelindex", str(file), "--name", "old", "-w", str(root)],
        fake_github,
        root,
    )
    assert refresh(root, fake_github).result.success
    values = (
        "protocol_digest, workload_digest, environment_digest, implementation_digest, series_digest, p50, observed_at"
    )
    with open_views(root / "liger.duckdb") as con:
        imported = con.execute(f"select {values} from fact_result where source = 'import'").fetchall()
        originals = set(con.execute(f"select {values} from fact_result where source != 'import'").fetchall())
        suites = dict(
            con.execute(
                "select p.harness, count(*) from fact_result join dim_protocol p using (protocol_digest) "
                "where source = 'import' group by 1"
            ).fetchall()
        )
    assert len(imported) == len(file.read_bytes().splitlines()) and set(imported) <= originals
    assert suites.keys() == {"liger-kernel-bench:cutile", "liger-kernel-bench:cutedsl"}


def test_the_next_generation_carries_the_migration_over(migrated, tmp_path):
    root = migrated.root
    root = _copy(root, tmp_path / "warehouse")
    gens = GenerationStore(Storage(root))
    table = sorted(gens.read_table(gens.current(), "digest_migration").to_pylist(), key=str)
    # An import of a few cuTile results publishes the next generation ...
    records = tmp_path / "cutile.ndjson"
    from typer.testing import CliRunner

    from liger_warehouse.cli import app

    out = tmp_path / "export"
    args = ["export", "kernelindex", "-w", str(root), "--kernel", "geglu", "--gpu", "NVIDIA B200", "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    (exported,) = out.glob("*.ndjson")
    records.write_bytes(exported.read_bytes())
    before = gens.current_id()
    with env(DAGSTER_HOME=str(dagster_home(tmp_path / "dagster_home"))):
        imported = CliRunner().invoke(app, ["import", "kernelindex", str(records), "-w", str(root)])
    assert imported.exit_code == 0, imported.output
    assert gens.load(gens.current_id()).parent == before
    # ... which keeps the migration record, and the imported copies have their originals' digests.
    assert sorted(gens.read_table(gens.current(), "digest_migration").to_pylist(), key=str) == table
    values = "protocol_digest, workload_digest, environment_digest, implementation_digest, series_digest"
    with open_views(root / "liger.duckdb") as con:
        imported = set(con.execute(f"select {values} from fact_result where source = 'import'").fetchall())
        originals = set(con.execute(f"select {values} from fact_result where source != 'import'").fetchall())
    assert imported <= originals


def test_an_import_into_an_unmigrated_warehouse_is_refused(schema_one, tmp_path):
    root = _copy(schema_one, tmp_path / "warehouse")
    before = published(root)
    gens = GenerationStore(Storage(root))
    line = b'{"not": "read"}\n'
    with pytest.raises(SchemaOutdated, match=r"schema version 1.*liger-warehouse refresh"):
        stage_import(gens, line, "early")
    assert gens.current_id() == before.current


def test_a_migration_that_cannot_read_a_snapshot_publishes_nothing(schema_one, tmp_path, fake_github):
    root = _copy(schema_one, tmp_path / "warehouse")
    before = published(root)
    gens = GenerationStore(Storage(root))
    revisions = gens.read_table(gens.current(), "dim_upstream_revision").to_pylist()
    gone = revisions[0]["content_digest"]
    (root / RawStore._snapshot_key(gone)).unlink()
    done = refresh(root, fake_github)
    assert not done.result.success
    # The error names the revision (any that had those bytes) it could not read again.
    labels = [r["run"] or f"{r['path']} @ {r['commit'][:12]}" for r in revisions if r["content_digest"] == gone]
    messages = step_failures(done.result)
    assert any("cannot be read again" in m and any(label in m for label in labels) for m in messages), messages
    assert gens.current_id() == before.current
    assert_still_there(root, before)
