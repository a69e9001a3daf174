"""Blocking audits of the staged generation: a failure stops the publish."""

import logging

import dagster as dg

from liger_warehouse.audit import checks
from liger_warehouse.model.tables import DIMENSIONS
from liger_warehouse.runtime.failpoints import failpoint
from liger_warehouse.store.generations import Generation, GenerationStore
from pipelines.defs.resources import WarehouseResource
from pipelines.defs.warehouse.handoff import INGEST_STEP, STAGED, staged_generation_id

# Shown in the UI beside each check; a failure of any of them stops the publish.
CHECK_DESCRIPTIONS = {
    "digests_unique": "Every digest in the staged table is unique.",
    "no_orphan_digests": "Every digest this table references exists in its dimension.",
    "p20_le_p50_le_p80": "p20 <= p50 <= p80 in every result.",
    "every_row_reconciled": "Every row of every new upstream revision, recounted from its raw "
    "snapshot, is in fact_result (via fact_revision_member) or in quarantined_row.",
}


def _spec(name: str, table: str) -> dg.AssetCheckSpec:
    # The import job stages with kernelindex_import instead of the table assets: the audit
    # runs after it there (a dependency outside the refresh job, which ignores it).
    return dg.AssetCheckSpec(
        name,
        asset=table,
        blocking=True,
        description=CHECK_DESCRIPTIONS[name],
        additional_deps=["kernelindex_import"],
    )


def _specs() -> list[dg.AssetCheckSpec]:
    # Built in a function: the defs loader would register module-level specs a second time.
    return [
        *(_spec("digests_unique", t) for t in (*DIMENSIONS, "dim_upstream_revision")),
        _spec("digests_unique", "fact_result"),
        _spec("no_orphan_digests", "fact_result"),
        _spec("no_orphan_digests", "fact_revision_member"),
        _spec("p20_le_p50_le_p80", "fact_result"),
        _spec("every_row_reconciled", "quarantined_row"),
    ]


SPECS = _specs()
AUDIT_STEP = "staged_generation_audit"


class NothingStagedIsNotUngated(logging.Filter):
    """Drops Dagster's warning that a blocking check of the audit "emitted no result" and a
    later step "will proceed without gating on it".

    The audit yields a result for every selected check whenever it runs, so it emits none only
    when Dagster skipped it: ``warehouse_tables`` staged nothing (upstream held nothing new) and
    produced none of the table outputs the audit reads. Every step after it reads those same
    absent outputs and is skipped as well, so nothing proceeds and nothing is published: the
    warning (logged before Dagster decides the skip) is false for this step, and would be the
    one line a no-change refresh prints. Any other step's warning passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("emitted no result" in message and f"in step {AUDIT_STEP!r}" in message)


# The logger of Dagster's execution plan, in every process that runs the refresh job.
_plan_logger = logging.getLogger("dagster._core.execution.plan.active")
if not any(isinstance(f, NothingStagedIsNotUngated) for f in _plan_logger.filters):
    _plan_logger.addFilter(NothingStagedIsNotUngated())


def _load(gens: GenerationStore, gen_id: str) -> Generation:
    try:
        return gens.load(gen_id)
    except FileNotFoundError:
        raise dg.Failure(f"generation {gen_id} is not in {gens.storage.url}", allow_retries=False) from None


def _result(spec: dg.AssetCheckSpec, outcomes: list[checks.CheckOutcome], gen_id: str) -> dg.AssetCheckResult:
    failures = sum(o.failures for o in outcomes)
    examples = [f"{o.table}.{o.name}: {e}" for o in outcomes for e in o.examples][:10]
    return dg.AssetCheckResult(
        asset_key=spec.asset_key,
        check_name=spec.name,
        passed=failures == 0,
        metadata={
            STAGED: gen_id,
            "failures": failures,
            "examples": dg.MetadataValue.md("\n".join(f"- {e}" for e in examples) or "none"),
        },
    )


@dg.multi_asset_check(specs=SPECS, can_subset=True)
def staged_generation_audit(context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource):
    """Digest uniqueness in every dimension, referential integrity of every fact digest,
    p20 <= p50 <= p80, and reconciliation: every row of every new upstream revision, recounted
    from its raw snapshot, is in ``fact_result`` (via ``fact_revision_member``) or in
    ``quarantined_row``.

    It audits the generation the latest ``fact_result`` names (this run's in a refresh) against
    the generation it was built on, and names it in each result: ``published_generation``
    publishes only a generation whose latest audit passed."""
    gens = warehouse.generations()
    gen_id = staged_generation_id(context, [INGEST_STEP])
    if gen_id is None:
        # No generation was ever staged, so nothing can be published unaudited.
        for spec in SPECS:
            if spec.key in context.selected_asset_check_keys:
                yield dg.AssetCheckResult(
                    asset_key=spec.asset_key,
                    check_name=spec.name,
                    passed=True,
                    metadata={"audited": "nothing: no generation was staged"},
                )
        return
    gen = _load(gens, gen_id)
    prior = gens.parent(gen)
    # What this refresh changed, not the whole history: see "the audit of one refresh" in
    # liger_warehouse/audit/checks.py for why that audits everything by induction.
    con = checks.connect_changes(gens, gen, prior)
    failpoint("audit")
    prior_files = {p.file for p in prior.parts("fact_revision_member")}
    new_revisions = [p.key for p in gen.parts("fact_revision_member") if p.file not in prior_files]
    one_part_per_source, references_kept = checks.part_invariants(gens, gen, prior)
    outcomes = {
        "digests_unique": [*checks.digest_uniqueness(con), one_part_per_source],
        "no_orphan_digests": [*checks.referential_integrity(con), references_kept],
        "p20_le_p50_le_p80": [checks.quantile_order(con)],
        "every_row_reconciled": [
            checks.reconciliation(con, "audited_revision"),
            checks.reconciliation_with_raw(con, warehouse.raw(), new_revisions),
        ],
    }
    con.close()
    for spec in SPECS:
        if spec.key not in context.selected_asset_check_keys:
            continue
        relevant = [
            o for o in outcomes[spec.name] if o.table == spec.asset_key.path[-1] or spec.name != "digests_unique"
        ]
        if spec.name == "no_orphan_digests":
            relevant = [o for o in outcomes[spec.name] if o.table == spec.asset_key.path[-1]]
        yield _result(spec, relevant, gen.id)
