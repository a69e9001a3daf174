"""The audit of one refresh reads only what the refresh changed, and still catches what the
whole-history checks would catch in those parts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from benchmarks.synthetic import Settings, generate
from benchmarks.synthetic.generate import is_run
from liger_warehouse.audit import checks
from liger_warehouse.store.generations import Generation
from tests.test_columnar_ingest import build

SETTINGS = Settings(revisions=7, rows_per_revision=200, seed=11, gh_pages_fraction=0.7)


@pytest.fixture
def two_generations(tmp_path: Path):
    """A warehouse of 7 revisions, then the same warehouse refreshed with revision 8 (a run)."""
    assert is_run(7, SETTINGS.gh_pages_fraction)
    mirror = tmp_path / "mirror"
    generate(mirror, SETTINGS)
    gens, first, _ = build(mirror, tmp_path / "w")
    gens.publish(first)
    generate(mirror, replace(SETTINGS, revisions=8), write_from=7)
    _, second, _ = build(mirror, tmp_path / "w")
    return gens, first, second


def _audit(gens, gen: Generation, prior: Generation) -> dict[str, int]:
    con = checks.connect_changes(gens, gen, prior)
    try:
        outcomes = [
            *checks.digest_uniqueness(con),
            *checks.referential_integrity(con),
            checks.quantile_order(con),
            checks.reconciliation(con, "audited_revision"),
            *checks.part_invariants(gens, gen, prior),
        ]
    finally:
        con.close()
    return {f"{o.table}.{o.name}": o.failures for o in outcomes if o.failures}


def test_scope_is_the_new_run(two_generations):
    gens, first, second = two_generations
    scope = checks.audit_scope(gens, second, first)
    assert len(scope.parts("fact_result")) == 1
    assert len(scope.parts("fact_revision_member")) == 1
    assert len(second.parts("fact_result")) > 4
    assert _audit(gens, second, first) == {}
    assert [o for o in checks.all_checks(gens, second) if not o.passed] == []


def _with_part(gens, gen: Generation, table: str, data: pa.Table) -> Generation:
    """``gen`` with its newest part of ``table`` replaced by ``data``."""
    old = gen.parts(table)[-1]
    part = gens.write_part(table, old.key, f"tampered-{table}", data)
    return replace(gen, tables={**gen.tables, table: [*gen.parts(table)[:-1], part]})


def _newest(gens, gen: Generation, table: str) -> pa.Table:
    return gens.read_parts(table, gen.parts(table)[-1:])


def test_a_duplicate_in_the_new_part_is_caught(two_generations):
    gens, first, second = two_generations
    facts = _newest(gens, second, "fact_result")
    bad = _with_part(gens, second, "fact_result", pa.concat_tables([facts, facts.slice(0, 1)]))
    assert _audit(gens, bad, first) == {"fact_result.digests_unique": 1}


def test_a_row_of_another_source_is_caught(two_generations):
    gens, first, second = two_generations
    facts = _newest(gens, second, "fact_result")
    moved = facts.set_column(
        facts.schema.get_field_index("source_key"), "source_key", pa.array(["elsewhere"] * facts.num_rows)
    )
    assert "fact_result.one_part_per_source" in _audit(gens, _with_part(gens, second, "fact_result", moved), first)


def test_an_orphan_member_is_caught(two_generations):
    gens, first, second = two_generations
    members = _newest(gens, second, "fact_revision_member")
    index = members.schema.get_field_index("result_digest")
    orphan = members.set_column(
        index, "result_digest", pc.binary_join_element_wise(members.column(index), pa.scalar("x"), "")
    )
    found = _audit(gens, _with_part(gens, second, "fact_revision_member", orphan), first)
    assert found["fact_revision_member.no_orphan_result_digest"] == members.num_rows


def test_a_lost_row_and_a_dropped_dimension_are_caught(two_generations):
    gens, first, second = two_generations
    members = _newest(gens, second, "fact_revision_member")
    short = _with_part(gens, second, "fact_revision_member", members.slice(1))
    assert _audit(gens, short, first) == {"fact_revision_member.every_row_reconciled": 1}
    dims = {**second.tables, "dim_workload": second.parts("dim_workload")[1:]}
    assert "fact_result.prior_references_kept" in _audit(gens, replace(second, tables=dims), first)


def test_a_failing_check_names_examples_and_a_passing_one_none(two_generations):
    gens, first, second = two_generations
    facts = _newest(gens, second, "fact_result")
    bad = _with_part(gens, second, "fact_result", pa.concat_tables([facts, facts.slice(0, 3)]))
    con = checks.connect_changes(gens, bad, first)
    try:
        outcomes = {o.table: o for o in checks.digest_uniqueness(con)}
    finally:
        con.close()
    duplicated = outcomes.pop("fact_result")
    assert duplicated.failures == 3
    assert sorted(e.split(" | ")[0] for e in duplicated.examples) == sorted(
        facts.column("result_digest").to_pylist()[:3]
    )
    assert all(o.failures == 0 and o.examples == [] for o in outcomes.values())
