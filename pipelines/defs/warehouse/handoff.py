"""The staged generation, handed from one asset to the next as materialization metadata.

A step that stages a generation (``warehouse_tables``, ``kernelindex_import``) or adds tables to
it (``fact_change_point``, ``sql_models``) names it under ``staged_generation`` in the
materialization of every table it writes, and the audit names the generation it audited in each
check result. A later step finds its input in the materializations of the assets it reads: this
run's when this run materialized them, else the latest. So each step also runs alone, in a later
run, on what was last staged; it fails with a clear message when nothing was staged, or when
that generation was published or superseded since.
"""

from collections.abc import Sequence

import dagster as dg

from liger_warehouse.model.tables import CHANGE_POINT_TABLES, SQL_MODELS
from liger_warehouse.store.generations import Generation, GenerationStore, NotStaged, PublishConflict

STAGED = "staged_generation"
# The ingested tables are staged together (by warehouse_tables, or kernelindex_import in an
# import), so one of them stands for all.
INGEST_STEP = "fact_result"
# Likewise for the change point step (fact_change_point and change_point_state), and the SQL
# models (each derived table), in their order.
CHANGE_POINT_STEP = CHANGE_POINT_TABLES[0]
SQL_MODELS_STEP = SQL_MODELS[0]

Context = dg.AssetExecutionContext | dg.AssetCheckExecutionContext


def _materializations(context: Context, assets: Sequence[str]) -> dict[str, dg.AssetMaterialization | None]:
    """The materialization of each of ``assets`` that hands on its generation."""
    latest = context.instance.get_latest_materialization_events([dg.AssetKey(a) for a in assets])
    found = {a: entry.asset_materialization if (entry := latest.get(dg.AssetKey(a))) else None for a in assets}
    # This run's own, when it wrote them: another run may have materialized them since.
    records = context.instance.get_records_for_run(
        context.run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        if materialization and materialization.asset_key.to_user_string() in found:
            found[materialization.asset_key.to_user_string()] = materialization
    return found


def staged_generation_id(context: Context, assets: Sequence[str]) -> str | None:
    """The generation the materializations of ``assets`` name; None when none names one.

    They must all name the same one: otherwise a step between them has not run on the newest."""
    named = {}
    for asset, materialization in _materializations(context, assets).items():
        value = materialization.metadata.get(STAGED) if materialization else None
        named[asset] = value.value if value else None
    gen_ids = set(named.values())
    if gen_ids <= {None}:
        return None
    if len(gen_ids) > 1:
        by_generation = {g: [a for a, named_id in named.items() if named_id == g] for g in gen_ids}
        listing = "; ".join(f"{g or 'no staged generation'}: {', '.join(a)}" for g, a in by_generation.items())
        raise dg.Failure(
            f"the assets this step reads were staged in different generations ({listing}); "
            "materialize the steps between them on the newest first, or run the whole refresh",
            allow_retries=False,
        )
    return gen_ids.pop()


def staged_input(context: Context, gens: GenerationStore, assets: Sequence[str]) -> Generation:
    """The staged generation ``assets`` hand on, still publishable; a Failure that says why not
    (nothing staged, never staged in this warehouse, already published, superseded)."""
    gen_id = staged_generation_id(context, assets)
    if gen_id is None:
        raise dg.Failure(
            f"nothing staged: no materialization of {', '.join(assets)} names a staged generation; "
            "run the refresh (or an import) first",
            allow_retries=False,
        )
    try:
        return gens.staged(gen_id)
    except (NotStaged, PublishConflict) as exc:
        raise dg.Failure(f"{exc} (the generation {', '.join(assets)} last handed on)", allow_retries=False) from None
