"""A refresh derives what its new facts touch, and the derived tables are those a derivation from
scratch gives, table by table and byte for byte (and the same derived a batch at a time, as a build
from scratch at 10^7 results derives `fact_build_point`, `fact_build_step` and the run steps).

A cut of the upstream mirror gains one gh-pages run per refresh: a nightly, a nightly of the
commit 0.7.0 is released from, then the 0.7.0 release run itself, listed after it (upstream lists
it first; listed after, it turns the nightly published before it into a run of the release
build, which the refresh must re-derive), a run listed between two others, and a run deleted
(its results become restatements). After each refresh every SQL model is derived
again from scratch over the published generation and compared with what the refresh published.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from liger_warehouse.analysis import carrying, derived, incremental, model_rows, part_inputs, run_batches
from liger_warehouse.model.tables import SCHEMAS, SQL_MODELS
from liger_warehouse.serve.database import create_views, open_duckdb
from liger_warehouse.store import generations
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.storage import Storage
from tests.conftest import OLDEST_MIRROR, refresh
from tests.small_mirror import small_mirror

pytestmark = pytest.mark.slow

LISTINGS = [
    ["4444fdf", "7656bcb", "81f932a-v0.6.5"],
    ["4444fdf", "7656bcb", "81f932a-v0.6.5", "1fdb668"],
    ["4444fdf", "7656bcb", "81f932a-v0.6.5", "1fdb668", "7644a0f"],
    ["4444fdf", "7656bcb", "81f932a-v0.6.5", "1fdb668", "7644a0f", "7644a0f-v0.7.0"],
    # a run listed between two others: it takes the place of the one after it in upstream's list
    ["4444fdf", "3b79375", "7656bcb", "81f932a-v0.6.5", "1fdb668", "7644a0f", "7644a0f-v0.7.0"],
    # a run upstream deleted: its results are no longer shown, so they are restated (withdrawn)
    ["4444fdf", "3b79375", "7656bcb", "81f932a-v0.6.5", "7644a0f", "7644a0f-v0.7.0"],
]


# dim_build as it was derived before it added up fact_build_source: every result grouped by the
# build it stands for. The builds added up per source must be the same rows.
BUILDS_FROM_EVERY_RESULT = """
with ranked as (
    select
        build,
        any_value(liger_version) as liger_version,
        any_value(build_kind) as build_kind,
        min(run_seq) as run_seq,
        min(observed_at) as first_observed,
        max(observed_at) as last_observed,
        list(distinct source_label order by source_label) as sources,
        count(*) as results,
        list(distinct source_label order by source_label) filter (where run_seq is not null) as runs,
        max(run_seq) as last_run_seq
    from result_build
    group by build
)
select
    row_number() over (order by v.version_rank, r.build_kind = 'nightly', r.run_seq nulls first, r.build) as build_rank,
    r.* exclude (run_seq, runs),
    v.version_rank,
    coalesce(r.runs, []) as runs
from ranked as r
left join dim_version as v using (liger_version)
"""


def _list_runs(mirror: Path, runs: list[str]) -> None:
    (mirror / "gh-pages" / "benchmarks" / "commits.txt").write_text("\n".join(runs) + "\n")


def _query_seq(root: Path) -> dict[str, int]:
    gens = GenerationStore(Storage(str(root)))
    rows = gens.read_table(gens.current(), "dim_upstream_revision", ["source", "run", "seq"]).to_pylist()
    return {r["run"]: r["seq"] for r in rows if r["source"] == "gh-pages"}


def test_each_refresh_derives_what_it_touched_and_matches_a_derivation_from_scratch(tmp_path: Path, monkeypatch):
    derived_keys = _spy_on_derivation(monkeypatch)
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=7)
    root = tmp_path / "warehouse"
    gens = GenerationStore(Storage(str(root)))
    previous: dict[str, str] = {}
    previous_pairs: dict[str, str] = {}
    previous_steps: dict[str, str] = {}
    previous_recent: dict[str, str] = {}
    previous_builds: dict[str, str] = {}
    previous_heads: dict[str, str] = {}
    previous_restated: dict[str, str] = {}
    previous_sources: dict[str, str] = {}
    for step, runs in enumerate(LISTINGS):
        _list_runs(mirror, runs)
        derived_keys.clear()
        assert refresh(root, upstream=str(mirror)).result.success
        published = gens.current()
        run_parts = {p.key: p.file for p in published.parts("fact_run_point")}
        ever = sorted(set().union(*LISTINGS[: step + 1]))  # a deleted run's results are kept
        assert sorted(run_parts) == ever
        pair_parts = {p.key: p.file for p in published.parts("fact_speedup_pair")}
        step_parts = {p.key: p.file for p in published.parts("fact_run_step")}
        recent_parts = {p.key: p.file for p in published.parts("fact_recent_point")}
        build_parts = {p.key: p.file for p in published.parts("fact_build_point")}
        head_parts = {p.key: p.file for p in published.parts("fact_build_step")}
        restated_parts = {p.key: p.file for p in published.parts("fact_restatement")}
        source_parts = {p.key: p.file for p in published.parts("fact_build_source")}
        assert sorted(step_parts) == sorted(recent_parts) == ever
        assert set(restated_parts) == set(pair_parts) == set(source_parts), "a restatement and build part per source"
        assert set(run_parts) < set(pair_parts), "a speedup pair part per source: the runs and main's CSVs"
        if step == 1:  # one new nightly: one new run part and speedup pair part, the others carried
            assert {r for r, f in run_parts.items() if previous.get(r) != f} == {"1fdb668"}
            assert {r for r, f in pair_parts.items() if previous_pairs.get(r) != f} == {"1fdb668"}
            assert {r for r, f in source_parts.items() if previous_sources.get(r) != f} == {"1fdb668"}
            assert {r for r, f in step_parts.items() if previous_steps.get(r) != f} == {"1fdb668"}
            assert {r for r, f in recent_parts.items() if previous_recent.get(r) != f} == {"1fdb668"}
            # its nightly build: a new build point part, and new step parts into it and into the
            # build after it (0.7.0, from main-branch rows), whose pairs now start from it
            nightly = {b for b in build_parts if b.endswith(".1fdb668")}
            assert len(nightly) == 1
            assert {b for b, f in build_parts.items() if previous_builds.get(b) != f} == nightly
            assert {b for b, f in head_parts.items() if previous_heads.get(b) != f} == nightly | {"0.7.0"}
        if step == 3:  # the release run, and the nightly of its commit it makes a release run
            assert {r for r, f in run_parts.items() if previous.get(r) != f} == {"7644a0f-v0.7.0", "7644a0f"}
            assert {r for r, f in source_parts.items() if previous_sources.get(r) != f} == {"7644a0f-v0.7.0", "7644a0f"}
            # the steps into the relabelled run and every run after it
            assert {r for r, f in step_parts.items() if previous_steps.get(r) != f} == {"7644a0f-v0.7.0", "7644a0f"}
        if step == 4:  # the listed-between run shares its place with 7656bcb and comes first by
            # name, so the per-run parts of 7656bcb and every run after it are derived again
            seq = _query_seq(root)
            assert seq["3b79375"] == seq["7656bcb"]
            assert {r for r, f in source_parts.items() if previous_sources.get(r) != f} == {"3b79375"}
            assert {r for r, f in step_parts.items() if previous_steps.get(r) != f} == set(runs) - {"4444fdf"}
        if step == 5:  # the deleted run: its restatements, the other sources' parts carried
            assert {r for r, f in restated_parts.items() if previous_restated.get(r) != f} == {"1fdb668"}
            assert {r for r, f in source_parts.items() if previous_sources.get(r) != f} == {"1fdb668"}
            withdrawn = gens.read_table(published, "fact_restatement").to_pylist()
            assert withdrawn and {(r["source_key"], r["restated_revision_digest"]) for r in withdrawn} == {
                ("1fdb668", None)
            }
        if step:  # the refresh derived the parts that changed, and no other
            assert "dim_series" not in derived_keys, "dim_series derived whole"
            for table, parts, before in (
                ("fact_run_point", run_parts, previous),
                ("fact_run_step", step_parts, previous_steps),
                ("fact_recent_point", recent_parts, previous_recent),
                ("fact_speedup_pair", pair_parts, previous_pairs),
                ("fact_build_source", source_parts, previous_sources),
            ):
                assert derived_keys[table] == {r for r, f in parts.items() if before.get(r) != f}, table
        previous, previous_pairs, previous_steps, previous_recent = run_parts, pair_parts, step_parts, recent_parts
        previous_builds, previous_heads, previous_restated = build_parts, head_parts, restated_parts
        previous_sources = source_parts

        # results restated only once a run is deleted
        empty = ("fact_restatement",) if step < 5 else ()
        incremental, scratch_parts = _as_from_scratch(gens, published, empty)
        # the per-source and per-run tables are derived a batch at a time, into a part per key, and the
        # per-build ones a batch of builds at a time over the parts of the runs that stand for
        # them: the same rows as their models over every part in one query
        with open_duckdb(gens.storage) as con:
            create_views(con, published)
            for name in (
                "fact_build_source",
                "fact_run_step",
                "fact_recent_point",
                "fact_build_point",
                "fact_speedup_point",
            ):
                assert model_rows.derive(con, name).equals(incremental[name]), name
            columns = ", ".join(SCHEMAS["dim_build"].names)
            every_result = con.execute(f"select {columns} from ({BUILDS_FROM_EVERY_RESULT}) order by build_rank")
            assert (
                every_result.fetchall()
                == con.execute(f"select {columns} from dim_build order by build_rank").fetchall()
            )
        # fact_build_point and fact_build_step from scratch a batch of builds at a time, here one
        # build per batch, run_steps one run at a time, and every table streamed from DuckDB in
        # batches of 3 rows: the same parts
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(part_inputs, "BATCH_RESULTS", 1)
            patch.setattr(model_rows, "STREAM_ROWS", 3)
            patch.setattr(run_batches, "BATCH_POINTS", 1)
            batched_gen, batched_store = _underived(published, "batched"), _without_derived(gens, "batched")
            batched = derived.add_to_generation(batched_store, batched_gen, True)
        assert batched == scratch_parts
        for name in SQL_MODELS:
            assert batched_store.read_table(batched_gen, name).equals(incremental[name]), name


def _as_from_scratch(
    gens: GenerationStore, published: generations.Generation, empty: tuple[str, ...] = ("fact_restatement",)
) -> tuple:
    """Every SQL model of ``published`` equals a derivation from scratch over its facts, part for
    part and row for row, and has rows unless it is one of ``empty`` (nothing restated yet): the
    tables and the parts derived from scratch. The derivation runs in a copy of
    the warehouse without a derived file (``_without_derived``): in the warehouse itself it would
    take each part whose name exists from the file the refresh wrote, right or wrong."""
    incremental = {name: gens.read_table(published, name) for name in SQL_MODELS}
    scratch_gen = _underived(published, "scratch")
    scratch = _without_derived(gens, "scratch")
    scratch_parts = derived.add_to_generation(scratch, scratch_gen, from_scratch=True)
    for name in SQL_MODELS:
        assert [(p.key, p.file, p.rows) for p in scratch_parts[name]] == [
            (p.key, p.file, p.rows) for p in published.parts(name)
        ], name
        assert scratch.read_table(scratch_gen, name).equals(incremental[name]), name
        assert (incremental[name].num_rows > 0) != (name in empty), name
    return incremental, scratch_parts


def _underived(published: generations.Generation, name: str) -> generations.Generation:
    """``published`` without the SQL models' tables, as the generation ``name`` staged on it (so
    it may be re-staged)."""
    tables = {t: p for t, p in published.tables.items() if t not in SQL_MODELS}
    return replace(published, id=f"{published.id}-{name}", parent=published.id, tables=tables)


def _without_derived(gens: GenerationStore, name: str) -> GenerationStore:
    """A copy of ``gens``'s warehouse, next to it as ``name``, without the files of the SQL
    models' tables."""
    root = Path(gens.storage.root)
    copy = root.with_name(f"{root.name}-{name}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, ignore=lambda folder, _: SQL_MODELS if Path(folder) == root / "tables" else ())
    assert (copy / "tables" / "fact_result").is_dir() and not any((copy / "tables" / t).exists() for t in SQL_MODELS)
    return GenerationStore(Storage(str(copy)))


def _spy_on_derivation(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """What the refreshes derive from now on: the keys (runs, sources) of each table's parts
    named by their inputs, whether or not a file of that name exists, and "dim_series" when
    it is derived whole."""
    derived_keys: dict[str, set[str]] = defaultdict(set)
    keyed_part, stream = carrying.Carrying._keyed_part, incremental.stream

    def spied_keyed_part(self, table: str, key: str, *args):
        derived_keys[table].add(key)
        return keyed_part(self, table, key, *args)

    def spied_stream(con, name: str, *args):
        if name == "dim_series":  # its one call: no published table to add to
            derived_keys[name].add("whole")
        return stream(con, name, *args)

    monkeypatch.setattr(carrying.Carrying, "_keyed_part", spied_keyed_part)
    monkeypatch.setattr(incremental, "stream", spied_stream)
    return derived_keys


def test_a_nightly_after_every_other_build_is_derived_from_its_series_latest_builds(tmp_path: Path):
    """With main-branch rows of old versions only (the oldest commit of the main CSV), each new
    nightly is the newest build: the refresh orders only that build's series after their latest
    other build (``build_order.APPENDED_SERIES_BUILDS``), and every table still equals a
    derivation from scratch."""
    mirror = small_mirror(tmp_path / "mirror", commits=0, runs=7)
    main = mirror / "commits" / "all_benchmark_data.json"  # the main CSV's oldest commit only
    oldest = json.loads((OLDEST_MIRROR / main.relative_to(mirror)).read_text())[-1:]
    main.write_text(json.dumps(oldest))
    csv = Path("raw") / oldest[0]["sha"] / "benchmark" / "data" / "all_benchmark_data.csv.gz"
    (mirror / csv).parent.mkdir(parents=True)
    shutil.copyfile(OLDEST_MIRROR / csv, mirror / csv)
    root = tmp_path / "warehouse"
    gens = GenerationStore(Storage(str(root)))
    for runs in LISTINGS[:3]:
        _list_runs(mirror, runs)
        assert refresh(root, upstream=str(mirror)).result.success
        published = gens.current()
        builds = gens.read_table(published, "dim_build").sort_by("build_rank")["build"].to_pylist()
        if runs[-1] != "81f932a-v0.6.5":
            assert builds[-1].endswith("." + runs[-1]), builds[-3:]  # the new nightly ranks last
        _as_from_scratch(gens, published)


def test_a_pairings_step_reaches_back_to_the_last_run_that_holds_both_of_its_series(tmp_path: Path):
    """A run without one baseline's rows holds its Liger series alone: the pairing's step into
    the run appended after it reaches back past it, to the run before that holds both, which the
    refresh reads from the published spreads (each pairing's ``last_run``)."""
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=7)
    csv = mirror / "gh-pages" / "benchmarks" / "7656bcb" / "benchmark.csv.gz"
    lines = gzip.decompress(csv.read_bytes()).splitlines(keepends=True)
    csv.write_bytes(
        gzip.compress(b"".join(line for line in lines if not line.startswith(b"cross_entropy,huggingface,")))
    )
    root = tmp_path / "warehouse"
    gens = GenerationStore(Storage(str(root)))
    for runs in LISTINGS[0][:2], LISTINGS[0]:
        _list_runs(mirror, runs)
        assert refresh(root, upstream=str(mirror)).result.success
    published = gens.current()
    series = gens.read_table(published, "dim_series", ["series_digest", "kernel"]).to_pylist()
    kernel = {s["series_digest"]: s["kernel"] for s in series}
    steps = gens.read_table(published, "fact_speedup_step").to_pylist()
    into = {(kernel[s["liger_series_digest"]], s["base_run"]) for s in steps if s["head_run"] == "81f932a-v0.6.5"}
    assert ("cross_entropy", "4444fdf") in into and ("cross_entropy", "7656bcb") not in into
    assert ("dyt_beta=True", "7656bcb") in into, "the other pairings step from the run before"
    _as_from_scratch(gens, published)


def test_a_new_run_reads_its_series_latest_runs_from_the_published_table(tmp_path: Path, monkeypatch):
    """A refresh that appends a new run finds the runs its series' rows reach back to in the
    published ``series_latest_runs`` (one row per series), not in every run point, and its
    pairings' last runs in the published ``fact_speedup_spread``, not in every speedup step: with
    both scans made to fail, the nightly still refreshes, and every table, the latest runs
    included, equals a derivation from scratch."""
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=7)
    root = tmp_path / "warehouse"
    gens = GenerationStore(Storage(str(root)))
    _list_runs(mirror, LISTINGS[0])
    assert refresh(root, upstream=str(mirror)).result.success
    before = gens.read_table(gens.current(), "series_latest_runs")

    def scanned(over: object) -> str:
        raise AssertionError(f"looked up the latest runs over every run point or step ({over})")

    monkeypatch.setattr(incremental, "appended_latest", scanned)
    monkeypatch.setattr(incremental, "stepped_pairing_runs", scanned)
    _list_runs(mirror, LISTINGS[1])
    assert refresh(root, upstream=str(mirror)).result.success
    published = gens.current()
    after = {r["series_digest"]: r["runs"] for r in gens.read_table(published, "series_latest_runs").to_pylist()}
    held = {r["series_digest"]: r["runs"] for r in before.to_pylist()}
    gained = {s for s, runs in after.items() if runs[0] == "1fdb668"}
    assert gained and all(after[s][1:] == held.get(s, [])[:4] for s in gained), "the new run first, then the old"
    assert all(after[s] == runs for s, runs in held.items() if s not in gained), "the other series carried"
    _as_from_scratch(gens, published)


def test_a_content_part_is_the_same_bytes_however_its_rows_are_chunked(tmp_path: Path, monkeypatch):
    """A derived table streamed from DuckDB comes in batches of any size: written a row group at
    a time, in one chunk each, its part has the same name and bytes (and a different table
    another name)."""
    monkeypatch.setattr(generations, "ROW_GROUP_ROWS", 7)
    gens = GenerationStore(Storage(str(tmp_path)))
    rows = pa.table({"series_digest": pa.array([f"{i:064x}" for i in range(30)], pa.string())})
    rows = model_rows.in_order("dim_series", _padded(rows))
    whole = gens.write_content_part("dim_series", rows)
    written = (tmp_path / whole.file).read_bytes()
    for size in (1, 4, 7, 11, 30):
        (tmp_path / whole.file).unlink()  # an existing part is not written again
        assert gens.write_content_part("dim_series", rows.to_batches(max_chunksize=size)) == whole
        assert (tmp_path / whole.file).read_bytes() == written
    assert pq.ParquetFile(tmp_path / whole.file).metadata.num_row_groups == 5
    assert gens.read_parts("dim_series", [whole]).equals(rows)
    assert gens.write_content_part("dim_series", rows.slice(1)).file != whole.file


def _padded(rows: pa.Table) -> pa.Table:
    """``rows`` with the other dim_series columns, null."""
    schema = SCHEMAS["dim_series"]
    columns = [rows[f.name] if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def test_runs_published_before_step_from_the_runs_before_them_not_from_their_own_published_steps(tmp_path: Path):
    """A refresh whose appended runs were published before derives their steps again: a release
    run listed after the nightly of its commit relabels that nightly, a run listed between two
    others moves those after it, a deleted run changes what the runs after it step from. Their
    pairings' last runs before them are then read from the published steps of the runs before
    them (an appended run's own published steps name itself). Here two runs hold the same series
    (the nightly has the CSV of the run before it), so those steps reach back to a run that keeps
    its part; after each refresh every table equals a derivation from scratch."""
    mirror = small_mirror(tmp_path / "mirror", commits=1, runs=7)
    runs_dir = mirror / "gh-pages" / "benchmarks"
    (runs_dir / "7644a0f" / "benchmark.csv.gz").write_bytes((runs_dir / "1fdb668" / "benchmark.csv.gz").read_bytes())
    root = tmp_path / "warehouse"
    gens = GenerationStore(Storage(str(root)))
    for step, runs in enumerate(LISTINGS[1:], start=1):
        _list_runs(mirror, runs)
        assert refresh(root, upstream=str(mirror)).result.success
        published = gens.current()
        _as_from_scratch(gens, published, ("fact_restatement",) if step < 5 else ())
        steps = gens.read_table(published, "fact_speedup_step", ["head_run", "base_run"]).to_pylist()
        into = {s["base_run"] for s in steps if s["head_run"] == "7644a0f"}
        assert into == ({"1fdb668"} if step > 1 else set()), (runs, into)
