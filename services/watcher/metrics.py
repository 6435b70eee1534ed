"""The watcher's Prometheus metrics: what it published, how often its watches restarted, and
each GitTarget's health (issue 26).

Created once per process (``WatcherMetrics()``) on the default registry that
``shared.metrics`` serves; tests pass a registry of their own so that several watchers can
run in one process.

The GitTarget series carry ``namespace`` and ``name`` (as Flux's ``gotk_*`` and Argo CD's
``argocd_app_*`` do) and are built from the last reconcile pass at each scrape
(``services.watcher.gittarget_metrics``): one series set per GitTarget that exists, and a
deleted GitTarget's series are gone with the next pass, with no ``remove`` to forget and
nothing left in a multiprocess directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import REGISTRY, CollectorRegistry, Counter

from services.watcher.gittarget_metrics import GitTargetCollector
from shared.metrics import LIVE


class WatcherMetrics:
    """Counters of published events, watch restarts and relists; the GitTarget series."""

    def __init__(
        self,
        registry: CollectorRegistry = REGISTRY,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.events = Counter(
            "gitops_reverser_watcher_events_published_total",
            "Object events published to branch streams, by operation.",
            ["operation"],
            registry=registry,
        )
        self.restarts = Counter(
            "gitops_reverser_watcher_watch_restarts_total",
            "Watch sessions that ended in an error and were started again, by error class.",
            ["reason"],
            registry=registry,
        )
        self.relists = Counter(
            "gitops_reverser_watcher_relists_total",
            "Lists made because a watch had no cursor or its cursor expired (410 Gone).",
            ["cause"],
            registry=registry,
        )
        self.status_writes = Counter(
            "gitops_reverser_watcher_status_writes_total",
            "Status writes of our custom resources, by kind.",
            ["kind"],
            registry=registry,
        )
        #: Per-GitTarget series: on ``shared.metrics.LIVE`` for the process's registry (served
        #: beside the multiprocess files, since they are rebuilt at each scrape), on a test's
        #: own registry otherwise.
        self.gittargets = GitTargetCollector(clock or time.time)
        (LIVE if registry is REGISTRY else registry).register(self.gittargets)
