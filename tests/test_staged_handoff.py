"""The staged generation is handed from asset to asset as materialization metadata (issue 14):
each step of a refresh also runs alone, in a run of its own, on what was last staged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pytest

from liger_warehouse.model.tables import INGESTED, SCHEMAS, SQL_MODELS
from liger_warehouse.store.generations import GenerationStore
from liger_warehouse.store.storage import Storage
from pipelines.defs.warehouse.checks import SPECS
from tests.conftest import FAST_RETRIES, env
from tests.small_mirror import small_mirror

# The refresh one step per run, in the order the job runs them.
STEPS = {
    "warehouse_tables": ["upstream_snapshots", *INGESTED],  # with the blocking audit of the tables
    "fact_change_point": ["fact_change_point", "change_point_state"],
    "sql_models": list(SQL_MODELS),
    "published_generation": ["published_generation"],
}


class Steps:
    """Runs of the code location's assets against one warehouse, recorded in one instance."""

    def __init__(self, root: Path, upstream: Path, instance: dg.DagsterInstance) -> None:
        self.root, self.upstream, self.instance = root, upstream, instance

    def _env(self):
        return env(LIGER_WAREHOUSE_DIR=str(self.root), LIGER_WAREHOUSE_UPSTREAM=str(self.upstream), **FAST_RETRIES)

    def job(self, name: str) -> dg.ExecuteInProcessResult:
        from pipelines.definitions import load

        with self._env():
            return load().resolve_job_def(name).execute_in_process(instance=self.instance, raise_on_error=False)

    def materialize(self, assets: list[str], audit: bool = True) -> dg.ExecuteInProcessResult:
        """A run of ``assets`` and (unless ``audit`` is false) the blocking audit of them."""
        checks = {spec.key for spec in SPECS if spec.asset_key.to_user_string() in assets} if audit else set()
        return self._run({dg.AssetKey(a) for a in assets}, checks)

    def audit(self) -> dg.ExecuteInProcessResult:
        """A run of the blocking audit alone."""
        return self._run(set(), {spec.key for spec in SPECS})

    def _run(self, assets: set[dg.AssetKey], checks: set[dg.AssetCheckKey]) -> dg.ExecuteInProcessResult:
        from pipelines.definitions import load

        with self._env():
            job = load().resolve_implicit_global_asset_job_def()
            subset = job.get_subset(asset_selection=assets, asset_check_selection=checks)
            return subset.execute_in_process(instance=self.instance, raise_on_error=False)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_mirror(tmp_path_factory.mktemp("handoff") / "mirror")


@pytest.fixture(scope="module")
def restating_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three commits per CSV: the newest two restate rows of the oldest, so that no derived table
    (fact_restatement) is empty and compared vacuously."""
    return small_mirror(tmp_path_factory.mktemp("handoff") / "mirror", commits=3)


@pytest.fixture
def steps(tmp_path: Path, mirror: Path) -> Iterator[Steps]:
    with dg.DagsterInstance.ephemeral() as instance:
        yield Steps(tmp_path / "warehouse", mirror, instance)


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.error.message


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()} if root.exists() else {}


def tables(root: Path) -> dict[str, pa.Table]:
    """Every published table, without the one column that says when it was built."""
    gens = GenerationStore(Storage(str(root)))
    read = {t: gens.read_table(gens.current(), t) for t in SCHEMAS}
    return {t: data.drop_columns([c for c in data.column_names if c == "ingested_at"]) for t, data in read.items()}


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """The same rows, as many times each, in any order."""
    with duckdb.connect() as con:
        con.register("a", a)
        con.register("b", b)
        differ = "select count(*) from ((from a except all from b) union all (from b except all from a))"
        return a.schema == b.schema and con.execute(differ).fetchone()[0] == 0


def test_each_step_alone_publishes_what_one_refresh_publishes(tmp_path: Path, restating_mirror: Path) -> None:
    with dg.DagsterInstance.ephemeral() as instance:
        whole = Steps(tmp_path / "whole", restating_mirror, instance)
        assert whole.job("refresh").success
    with dg.DagsterInstance.ephemeral() as instance:
        steps = Steps(tmp_path / "steps", restating_mirror, instance)
        runs = {}
        for step, assets in STEPS.items():
            runs[step] = steps.materialize(assets)
            assert runs[step].success, (step, failure_message(runs[step]))
            if step != "published_generation":
                assert GenerationStore(Storage(str(steps.root))).current_id() is None, f"{step} published"
    # The audit ran with the tables, on the generation the later runs added to and published.
    published = GenerationStore(Storage(str(steps.root))).current_id()
    audits = runs["warehouse_tables"].get_asset_check_evaluations()
    assert len(audits) == len(SPECS)
    assert all(a.passed and a.metadata["staged_generation"].value == published for a in audits)

    one_run, step_by_step = tables(whole.root), tables(steps.root)
    assert all(one_run[t].num_rows > 0 for t in ("fact_result", "change_point_state", *SQL_MODELS))
    for table in SCHEMAS:
        assert step_by_step[table].num_rows == one_run[table].num_rows, table
        assert same_rows(step_by_step[table], one_run[table]), table


def test_publishing_with_nothing_staged_fails_and_changes_nothing(steps: Steps) -> None:
    result = steps.materialize(["published_generation"])
    assert not result.success
    assert "nothing staged" in failure_message(result), failure_message(result)
    assert files(steps.root) == {}


def test_a_step_alone_refuses_a_generation_already_published(steps: Steps) -> None:
    assert steps.job("refresh").success
    before = files(steps.root)
    for step in ("fact_change_point", "sql_models", "published_generation"):
        result = steps.materialize(STEPS[step])
        assert not result.success, step
        assert "is already published" in failure_message(result), failure_message(result)
        assert files(steps.root) == before, step


def test_publishing_alone_refuses_a_generation_superseded_since(tmp_path: Path, steps: Steps) -> None:
    for step in ("warehouse_tables", "fact_change_point", "sql_models"):
        assert steps.materialize(STEPS[step]).success, step
    # Another refresh of the same warehouse, recorded elsewhere, publishes first.
    with dg.DagsterInstance.ephemeral() as instance:
        assert Steps(steps.root, steps.upstream, instance).job("refresh").success
    before = files(steps.root)
    result = steps.materialize(STEPS["published_generation"])
    assert not result.success
    assert "was published meanwhile" in failure_message(result), failure_message(result)
    assert files(steps.root) == before


def test_publishing_alone_needs_a_passed_audit_of_that_generation(steps: Steps) -> None:
    assert steps.materialize(STEPS["warehouse_tables"], audit=False).success
    for step in ("fact_change_point", "sql_models"):
        assert steps.materialize(STEPS[step]).success, step
    before = files(steps.root)
    result = steps.materialize(STEPS["published_generation"])
    assert not result.success
    assert "is not audited" in failure_message(result), failure_message(result)
    assert files(steps.root) == before
    # The audit alone, in a run of its own, audits what was staged; then the publish goes through.
    assert steps.audit().success
    assert steps.materialize(STEPS["published_generation"]).success
    staged = GenerationStore(Storage(str(steps.root)))
    assert staged.current().rows("fact_result") > 0


def test_a_step_alone_refuses_inputs_staged_in_different_generations(tmp_path: Path, steps: Steps) -> None:
    assert steps.job("refresh").success
    # Upstream gains a revision; only the tables take it in: the change points still name the
    # published generation.
    newer = Steps(steps.root, small_mirror(tmp_path / "newer", commits=3), steps.instance)
    assert newer.materialize(STEPS["warehouse_tables"]).success
    before = files(steps.root)
    for step in ("sql_models", "published_generation"):
        result = newer.materialize(STEPS[step])
        assert not result.success, step
        message = failure_message(result)
        assert "staged in different generations" in message and "fact_change_point" in message, message
        assert files(steps.root) == before, step
    # Run in order, the steps publish it.
    for step in ("fact_change_point", "sql_models", "published_generation"):
        assert newer.materialize(STEPS[step]).success, step


def test_each_derived_table_says_how_long_it_took(steps: Steps) -> None:
    for step in ("warehouse_tables", "fact_change_point"):
        assert steps.materialize(STEPS[step]).success, step
    result = steps.materialize(STEPS["sql_models"])
    assert result.success
    seconds = {
        event.asset_key.to_user_string(): event.step_materialization_data.materialization.metadata["seconds"].value
        for event in result.get_asset_materialization_events()
    }
    assert set(seconds) == set(SQL_MODELS)
    assert all(value >= 0 for value in seconds.values())
