"""What names a derived part and how derivations are batched: each source's inputs (a gh-pages
run, a main-branch CSV, an import) digested into the name of its parts of the per-source tables,
the digests chained over runs that name the parts of the per-run tables, whether a generation's
derived tables are this code's, and batches of sources or builds of a bounded number of results."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from hashlib import sha256

import duckdb
import pyarrow as pa

from liger_warehouse.analysis.model_rows import derivation_version
from liger_warehouse.model.derived_order import ORDER
from liger_warehouse.model.tables import SQL_MODELS
from liger_warehouse.store.generations import Generation, key_folder

# Results per batch of builds or sources a derivation reads: at 10^7 results fact_build_point
# in one query ran out of DuckDB's 1 GB limit, and so did batches of 2M.
BATCH_RESULTS = 500_000
# Derived tables with one part per source (a gh-pages run, a main-branch CSV, an import) or build.
KEYED_PARTS = (
    "fact_build_source",
    "fact_run_point",
    "fact_speedup_pair",
    "fact_speedup_point",
    "fact_recent_point",
    "fact_run_step",
    "fact_speedup_step",
    "fact_build_point",
    "fact_build_step",
    "fact_restatement",
)


def digest(*values: object) -> str:
    return sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:32]


def chained_digests(runs: list[tuple[str, str]]) -> dict[str, str]:
    """For each gh-pages run of ``runs`` (in upstream's order, with its run point part), a digest
    of the SQL and of every run up to it with its part: what names the parts of a table whose
    rows for a run read that run and runs before it. A changed run changes its digest and that of
    every run after it."""
    digests, chain = {}, derivation_version()
    for run, part in runs:
        chain = digest(chain, run, part)
        digests[run] = chain
    return digests


def build_batches(con: duckdb.DuckDBPyConnection, only: Iterable[str] | None = None) -> list[pa.Array]:
    """Every build of ``dim_build`` (or those of ``only``) in release order, in ``sized_batches``:
    a refresh that touches many builds (a main-branch commit touches every version in its CSV)
    derives them a batch at a time too."""
    builds = con.execute("select build, results from dim_build order by build_rank").fetchall()
    if only is not None:
        wanted = set(only)
        builds = [(build, results) for build, results in builds if build in wanted]
    return [pa.array(batch, pa.string()) for batch in sized_batches(builds)]


def sized_batches(sized: Iterable[tuple[str, int]]) -> Iterator[list[str]]:
    """Names in order, in batches of at most ``BATCH_RESULTS`` results (a name with more is a
    batch of its own)."""
    batch: list[str] = []
    held = 0
    for name, results in sized:
        if batch and held + results > BATCH_RESULTS:
            yield batch
            batch, held = [], 0
        batch.append(name)
        held += results
    if batch:
        yield batch


@dataclass(frozen=True)
class Source:
    """A source of fact_result (a gh-pages run, a main-branch CSV, an import) and what the rows
    derived from it alone come from."""

    source: str
    revisions: frozenset[str]
    digest: str  # of its fact_result parts, its revisions, their places and heads, its releases, the SQL


def source_inputs(con: duckdb.DuckDBPyConnection, gen: Generation) -> dict[str, Source]:
    """Each source of ``gen``'s fact_result parts. Its digest names its parts of the per-source
    derived tables: the source's fact_result parts, its revisions, their places and which is head
    (a withdrawn import has none, and stands for no build), the releases of its commit (a release
    run makes the other runs of its commit release runs), and the SQL."""
    revisions = con.execute(
        """
        select
            r.source_key,
            any_value(r.source),
            -- is_head too: a withdrawn import (no revision head) stands for no build (result_build)
            list([r.revision_digest, r.seq::varchar, r.is_head::varchar] order by r.seq, r.revision_digest)
                as revisions,
            list_sort(list(distinct rc.release_version) filter (where rc.release_version is not null)) as releases
        from dim_upstream_revision as r
        left join (
            select distinct split_part(run, '-', 1) as run_commit, release_version
            from dim_upstream_revision
            where release_version is not null
        ) as rc on rc.run_commit = split_part(r.run, '-', 1)
        group by r.source_key
        """
    ).fetchall()
    files: dict[str, list[str]] = {}
    for part in gen.parts("fact_result"):
        files.setdefault(part.key, []).append(part.file)
    held = {key: (source, revs, releases) for key, source, revs, releases in revisions}
    if missing := sorted(set(files) - set(held)):
        raise ValueError(f"fact_result parts of sources without revisions in dim_upstream_revision: {missing}")
    return {
        key: Source(
            source,
            frozenset(revision for revision, *_ in revs),
            digest(derivation_version(), key, sorted(files[key]), revs, releases),
        )
        for key, (source, revs, releases) in held.items()
        if key in files
    }


def carried(prior: Generation, table: str) -> bool:
    parts = prior.parts(table)
    return len(parts) == 1 and parts[0].key == derivation_version()


def derived_current(gen: Generation) -> bool:
    """Whether ``gen``'s derived tables were derived by this code's SQL. After an upgrade that
    changed ``sql/``, they were not: the next refresh stages a generation to derive them again,
    even when upstream holds nothing new. (The tables of ``KEYED_PARTS`` have a part per source
    or build; they are derived with the others, whose one part is keyed by the SQL.)"""
    return all(carried(gen, name) for name in SQL_MODELS if name not in KEYED_PARTS) and not earlier_layout(gen)


def earlier_layout(gen: Generation) -> bool:
    """Whether a table of ``KEYED_PARTS`` is kept as earlier versions kept it: in one part keyed
    by the SQL, or in parts outside their key's folder (``part_folder``)."""
    return any(
        carried(gen, name) or any(f"/{part_folder(name, p.key)}/" not in p.file for p in gen.parts(name))
        for name in KEYED_PARTS
    )


def part_folder(table: str, key: str) -> str:
    """The folder of ``table``'s parts of ``key`` (a source, run or build): named by its key
    column's value (``key_folder``), so that readers filtering on it skip the rest."""
    return key_folder(ORDER[table][0], key)


def keyed_name(table: str, key: str, name: str) -> str:
    """The name of ``table``'s part ``name`` of ``key``, in the key's folder."""
    return f"{part_folder(table, key)}/{name}"
