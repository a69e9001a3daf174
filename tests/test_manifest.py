"""A generation's manifest: the JSON text it is stored as, and reading it back."""

from __future__ import annotations

import json
from dataclasses import asdict

from liger_warehouse.store.generations import Generation, Part, ReadersCopy, key_folder


def _generation(warning: str) -> Generation:
    points = [Part(f"run-{i}", f"tables/fact_run_point/{key_folder('run', f'r{i}')}/{i}.parquet", i) for i in range(3)]
    return Generation(
        id="20261203T000000000000Z-abcdef",
        parent="20261202T000000000000Z-012345",
        created_at="2026-12-03T00:00:00+00:00",
        tables={"fact_run_point": points, "dim_series": [Part("all", "tables/dim_series/all.parquet", 7)]},
        summary={"warnings": [warning], "row_counts": {"fact_result": 5, "dim_series": 7}, "rederived": True},
        readers={"fact_run_point": ReadersCopy("tables/fact_run_point/readers.parquet", 3, ["run"], points[:2])},
    )


def test_the_manifest_is_sorted_json_indented_by_one_space():
    gen = _generation("GPU 'X1' is not in the GPU catalog")
    assert gen.to_json() == json.dumps(asdict(gen), indent=1, sort_keys=True)


def test_a_manifest_reads_back_as_the_generation_it_was_written_from():
    gen = _generation("GPU 'Radeon™ X' is not in the GPU catalog")
    text = gen.to_json()
    assert json.loads(text) == json.loads(json.dumps(asdict(gen)))
    assert Generation.from_json(text) == gen


def test_a_manifest_written_before_schema_versions_and_readers_copies_reads_as_version_one():
    data = asdict(_generation("a warning"))
    del data["schema_version"], data["readers"]
    old = Generation.from_json(json.dumps(data, indent=1, sort_keys=True))
    assert (old.schema_version, old.readers) == (1, {})
    assert old.tables == _generation("a warning").tables
