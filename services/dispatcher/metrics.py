"""The dispatcher's metrics (O1): apply requests by applier kind, reason and outcome.

Defined as the other processes define theirs: a class whose metrics live on the registry it is
given. rq calls the job function by its path with nothing injected, so the process's one
instance is ``METRICS``, built on the default registry that ``shared.metrics`` serves.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter


class DispatcherMetrics:
    """What became of the requests the dispatcher's jobs attempted."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.apply_requests = Counter(
            "gitops_reverser_apply_requests_total",
            "Apply requests by applier kind, reason and outcome",
            ["applier_kind", "reason", "outcome"],
            registry=registry,
        )


METRICS = DispatcherMetrics()
