"""Blocking audits of the staged generation: a failure stops the publish."""

import dagster as dg

from pipelines import checks
from pipelines.defs.resources import WarehouseResource
from pipelines.tables import DIMENSIONS


def _specs() -> list[dg.AssetCheckSpec]:
    # Built in a function: the defs loader would register module-level specs a second time.
    return [
        *(
            dg.AssetCheckSpec("digests_unique", asset=t, blocking=True)
            for t in (*DIMENSIONS, "dim_upstream_revision")
        ),
        dg.AssetCheckSpec("digests_unique", asset="fact_result", blocking=True),
        dg.AssetCheckSpec("no_orphan_digests", asset="fact_result", blocking=True),
        dg.AssetCheckSpec("no_orphan_digests", asset="fact_revision_member", blocking=True),
        dg.AssetCheckSpec("p20_le_p50_le_p80", asset="fact_result", blocking=True),
        dg.AssetCheckSpec("every_row_reconciled", asset="quarantined_row", blocking=True),
    ]


SPECS = _specs()


def _result(spec: dg.AssetCheckSpec, outcomes: list[checks.CheckOutcome]) -> dg.AssetCheckResult:
    failures = sum(o.failures for o in outcomes)
    examples = [f"{o.table}.{o.name}: {e}" for o in outcomes for e in o.examples][:10]
    return dg.AssetCheckResult(
        asset_key=spec.asset_key,
        check_name=spec.name,
        passed=failures == 0,
        metadata={
            "failures": failures,
            "examples": dg.MetadataValue.md("\n".join(f"- {e}" for e in examples) or "none"),
        },
    )


@dg.multi_asset_check(specs=SPECS, can_subset=True)
def staged_generation_audit(context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource):
    """Digest uniqueness in every dimension, referential integrity of every fact digest,
    p20 <= p50 <= p80, and reconciliation: every row of every new upstream revision, recounted
    from its raw snapshot, is in ``fact_result`` (via ``fact_revision_member``) or in
    ``quarantined_row``."""
    gens = warehouse.generations()
    gen_id = warehouse.ledger().staged(context.run.run_id)
    if gen_id is None:
        return
    gen, prior = gens.load(gen_id), gens.current()
    con = checks.connect(gens, gen)
    new_revisions = [
        p.key
        for p in gen.parts("fact_revision_member")
        if p not in prior.parts("fact_revision_member")
    ]
    outcomes = {
        "digests_unique": checks.digest_uniqueness(con),
        "no_orphan_digests": checks.referential_integrity(con),
        "p20_le_p50_le_p80": [checks.quantile_order(con)],
        "every_row_reconciled": [
            checks.reconciliation(con),
            checks.reconciliation_with_raw(con, warehouse.raw(), new_revisions),
        ],
    }
    con.close()
    for spec in SPECS:
        if spec.key not in context.selected_asset_check_keys:
            continue
        relevant = [
            o
            for o in outcomes[spec.name]
            if o.table == spec.asset_key.path[-1] or spec.name != "digests_unique"
        ]
        if spec.name == "no_orphan_digests":
            relevant = [o for o in outcomes[spec.name] if o.table == spec.asset_key.path[-1]]
        yield _result(spec, relevant)
