"""The watcher's Prometheus metrics: what it published, and how often its watches restarted.

Created once per process (``WatcherMetrics()``) on the default registry that
``shared.metrics`` serves; tests pass a registry of their own so that several watchers can
run in one process.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter


class WatcherMetrics:
    """Counters of published events, watch restarts and relists."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
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
