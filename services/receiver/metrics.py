"""The receiver's Prometheus metrics: deliveries by receiver type and by how they were answered.

Created once per app (``ReceiverMetrics()``) on the default registry that ``shared.metrics``
serves (under gunicorn the values go to the multiprocess directory and add up across
workers); tests pass a registry of their own so that several apps can live in one process.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

#: Seconds; a delivery is answered in milliseconds, and GitHub gives up after 10 s (facts §1.1).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class ReceiverMetrics:
    """Counters of deliveries and a histogram of how long answering them took."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.deliveries = Counter(
            "gitops_reverser_receiver_deliveries_total",
            "Webhook deliveries, by receiver type (unknown for no receiver) and result.",
            ["type", "result"],
            registry=registry,
        )
        self.notices = Counter(
            "gitops_reverser_receiver_notices_total",
            "Push notices stored on branch streams, by receiver type.",
            ["type"],
            registry=registry,
        )
        self._delivered: dict[tuple[str, str], Counter] = {}
        self._noticed: dict[str, Counter] = {}
        self.latency = Histogram(
            "gitops_reverser_receiver_delivery_seconds",
            "Time from the start of a hook request to its answer.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def delivered(self, kind: str, result: str) -> None:
        """One delivery to a receiver of type ``kind`` (or ``unknown``), answered ``result``.

        The labelled child is looked up once per label set (types x results, a few dozen):
        ``labels()`` takes a lock and builds its key on every call.
        """
        child = self._delivered.get((kind, result))
        if child is None:
            child = self._delivered[(kind, result)] = self.deliveries.labels(kind, result)
        child.inc()

    def noticed(self, kind: str, count: int) -> None:
        """``count`` notices stored for a delivery to a receiver of type ``kind``."""
        child = self._noticed.get(kind)
        if child is None:
            child = self._noticed[kind] = self.notices.labels(kind)
        child.inc(count)
