"""Typed resources: where the warehouse lives and where upstream is read from."""

import logging
import os

import dagster as dg
from pydantic import PrivateAttr

from liger_warehouse import settings
from liger_warehouse.analysis.series_pool import SeriesPool
from liger_warehouse.lake.location import Lake
from liger_warehouse.settings import DEFAULT_API_BASE, DEFAULT_RAW_BASE, DEFAULT_UPSTREAM
from liger_warehouse.store.raw import RawStore
from liger_warehouse.store.storage import Storage
from liger_warehouse.upstream.http import HttpPolicy
from liger_warehouse.upstream.open import UpstreamSettings, open_upstream
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
        """Stop the workers: they serve the change points only, and the memory they hold would
        count against every step after it (at 10^7 results, the readers' copies' sort)."""
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
    a chat-style ``{"text": …}`` body; liger_warehouse/alerts/webhook.py)."""

    webhook: str | None = None


class UpstreamResource(dg.ConfigurableResource):
    """Where upstream is read from: ``github:OWNER/REPO`` (API and raw bases configurable) or a
    local mirror directory. ``github_token`` is sent when set and never logged."""

    upstream: str = DEFAULT_UPSTREAM
    api_base: str = DEFAULT_API_BASE
    raw_base: str = DEFAULT_RAW_BASE
    github_token: str | None = None
    timeout_seconds: float = 30.0
    max_attempts: int = 5
    backoff_seconds: float = 1.0
    max_download_mb: int = 256

    def settings(self) -> UpstreamSettings:
        policy = HttpPolicy(
            timeout=self.timeout_seconds,
            max_attempts=self.max_attempts,
            backoff_base=self.backoff_seconds,
            max_bytes=self.max_download_mb * 1024 * 1024,
        )
        return UpstreamSettings(self.upstream, self.api_base, self.raw_base, self.github_token or None, policy=policy)

    def open(self, state: Storage) -> Upstream:
        return open_upstream(self.settings(), state)


@dg.definitions
def resources() -> dg.Definitions:
    """Configured from ``liger_warehouse.settings`` when the definitions load; a run's config
    (the CLI's ``--warehouse`` and ``--upstream``) overrides them. The token stays an
    ``EnvVar``, so the UI shows the variable, never its value."""
    s = settings.current()
    return dg.Definitions(
        resources={
            "warehouse": WarehouseResource(root=s.dir, catalog=s.catalog, data=s.data),
            "alerts": AlertResource(webhook=s.alert_webhook),
            "change_points": ChangePointResource(workers=s.change_point_workers or os.cpu_count() or 1),
            "upstream": UpstreamResource(
                upstream=s.upstream,
                api_base=s.github_api,
                raw_base=s.github_raw,
                github_token=dg.EnvVar("GITHUB_TOKEN") if s.github_token else None,
                timeout_seconds=s.timeout_seconds,
                max_attempts=s.max_attempts,
                backoff_seconds=s.backoff_seconds,
                max_download_mb=s.max_download_mb,
            ),
        }
    )
