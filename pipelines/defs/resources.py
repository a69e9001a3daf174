"""Typed resources: where the warehouse lives and where upstream is read from."""

import logging
import os

import dagster as dg
from pydantic import PrivateAttr

from liger_warehouse import settings
from liger_warehouse.alerts.github_issues import IssueTracker, issue_tracker
from liger_warehouse.analysis.series_pool import SeriesPool
from liger_warehouse.lake.location import Lake
from liger_warehouse.settings import DEFAULT_UPSTREAM
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream, settings_from_env
from liger_warehouse.upstream.sources import Upstream


class WarehouseResource(dg.ConfigurableResource):
    """The warehouse root (a directory, default ``./warehouse``, or an object-store URI) with its
    raw store, and the lake: its DuckLake catalog and data path (by default in the root)."""

    root: str = "warehouse"
    catalog: str | None = None
    data: str | None = None

    def storage(self) -> Storage:
        return Storage(self.root)

    def raw(self) -> RawStore:
        return RawStore(self.storage())

    def lake(self) -> Lake:
        return Lake.of(self.root, self.catalog, self.data)


class ChangePointResource(dg.ConfigurableResource):
    """The processes that compute change points (liger_warehouse/analysis/series_pool.py). With
    more than one, they start with the run, so they load Otava and SciPy while the steps before
    the change points run, and stop when the change points are computed (``release``) or with
    the run."""

    workers: int = 1
    _pool: SeriesPool | None = PrivateAttr(None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.workers > 1:
            self._pool = SeriesPool(self.workers)
            self._pool.start()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.release()

    def release(self) -> None:
        """Stop the workers: they serve the change points only (the publishing step stops them
        when it ends, and the run's end does, whichever comes first)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def pool(self, log: logging.Logger) -> SeriesPool | None:
        """The started workers; None to compute in the step's own process (also when no worker
        could start: the warning goes to ``log``)."""
        if self._pool is not None and (failure := self._pool.start_failure()) is not None:
            self._pool.close()
            self._pool = None
            log.warning(f"change points are computed in the step's process: no worker could start: {failure}")
        return self._pool


class AlertResource(dg.ConfigurableResource):
    """Where the nightly digest goes: webhook URLs, space-separated (``slack:`` before a URL sends
    a chat-style ``{"text": …}`` body; liger_warehouse/alerts/webhook.py), and the GitHub
    repository that gets an issue per confirmed regression (its token is read at run time)."""

    webhook: str | None = None
    github_repo: str | None = None

    def issue_tracker(self) -> IssueTracker | None:
        s = settings.current()
        return issue_tracker(s.github_api, self.github_repo, s.alert_github_token)


class UpstreamResource(dg.ConfigurableResource):
    """Where upstream is read from: ``github:OWNER/REPO`` or a local mirror directory. Everything
    else about reading it (API and raw bases, token, timeouts, retries, size cap) is a setting
    (``liger_warehouse.settings``), declared there once and read when the run reads upstream."""

    upstream: str = DEFAULT_UPSTREAM

    def settings(self) -> UpstreamSettings:
        return settings_from_env(self.upstream)

    def open(self, state: Storage) -> Upstream:
        return open_upstream(self.settings(), state)


@dg.definitions
def resources() -> dg.Definitions:
    """Where the warehouse and upstream are, from ``liger_warehouse.settings`` when the
    definitions load; a run's config (the CLI's ``--warehouse``, ``--catalog``, ``--data`` and
    ``--upstream``) overrides them. Every other setting is read from the settings at run time,
    so the token is never part of a run's config."""
    s = settings.current()
    return dg.Definitions(
        resources={
            "warehouse": WarehouseResource(root=s.dir, catalog=s.catalog, data=s.data),
            "alerts": AlertResource(webhook=s.alert_webhook, github_repo=s.alert_github_repo),
            "change_points": ChangePointResource(workers=s.change_point_workers or os.cpu_count() or 1),
            "upstream": UpstreamResource(upstream=s.upstream),
        }
    )
