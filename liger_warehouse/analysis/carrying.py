"""What the published generation holds that a staged one can carry, and how a derived table's
parts are written: the part of each key named by what its rows come from (a source, a run),
a part named by its content (a build), or one part keyed by the SQL. ``incremental`` says what
each derived table carries; this is what every table's way of carrying shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from liger_warehouse.analysis.model_rows import derivation_version, grouped
from liger_warehouse.analysis.part_inputs import part_folder
from liger_warehouse.model.derived_order import ORDER
from liger_warehouse.model.tables import empty
from liger_warehouse.store.generations import Generation, GenerationStore, Part, part_file, parts_diff


@dataclass
class Carrying:
    """What the published generation ``prior`` already holds that ``gen`` can carry."""

    gens: GenerationStore
    gen: Generation
    prior: Generation | None
    new_files: list[Part] = field(default_factory=list)  # fact_result parts not in prior
    gone_files: list[Part] = field(default_factory=list)  # prior fact_result parts not in gen

    def _unchanged(self, table: str, names: dict[str, str]) -> dict[str, Part]:
        """The published parts of ``table`` whose key still wants the same part (named by what
        its rows come from): those are carried."""
        held = {(p.key, p.file): p for p in self.prior.parts(table)} if self.prior else {}
        wanted = {key: (key, part_file(table, name)) for key, name in names.items()}
        return {key: held[want] for key, want in wanted.items() if want in held}

    def _keyed_parts(
        self, table: str, rows: pa.RecordBatchReader, keys: set[str], names: dict[str, str]
    ) -> dict[str, Part]:
        """A part of ``table`` per key of ``keys`` (a source, a run), written as its part of
        ``names``, from ``rows`` sorted by the key (``ORDER``); a key without rows (a source
        without a pair, a run without a step) gets an empty part, so it is not derived again."""
        parts = {key: self._keyed_part(table, key, names[key], part) for key, part in grouped(rows, ORDER[table][0])}
        return parts | {key: self._keyed_part(table, key, names[key], empty(table)) for key in keys - parts.keys()}

    def _keyed_part(self, table: str, key: str, name: str, rows: pa.Table) -> Part:
        """The part ``name``, written unless it exists: its name is a digest of what its rows
        come from, so a file of that name holds these rows, and a published part is never
        rewritten."""
        if self.gens.storage.exists(file := part_file(table, name)):
            return Part(key=key, file=file, rows=rows.num_rows)
        return self.gens.write_part(table, key, name, rows)

    def _content_parts(self, table: str, rows: pa.RecordBatchReader) -> dict[str, Part]:
        """A part of ``table`` per build in ``rows`` (sorted by it: its first ``ORDER`` column),
        named by its content and keyed by the build."""
        return {
            build: replace(self.gens.write_content_part(table, part, part_folder(table, build)), key=build)
            for build, part in grouped(rows, ORDER[table][0])
        }

    def _changed_rows(self, table: str, parts: list[Part], columns: list[str]) -> pa.Table:
        """``columns`` of the parts of ``table`` that came (``parts`` has them, the published
        table not) or went."""
        came, went = parts_diff(self.prior.parts(table), parts)
        return self.gens.read_parts(table, came + went, columns)

    def content_part(self, table: str, data: pa.Table | pa.RecordBatchReader) -> Part:
        # Keyed by the derivation version: a later refresh carries it only under the same SQL.
        return replace(self.gens.write_content_part(table, data), key=derivation_version())
