"""The dispatcher's metrics (O1)."""

from __future__ import annotations

from prometheus_client import Counter

APPLY_REQUESTS = Counter(
    "apply_requests_total",
    "Apply requests by applier kind, reason and outcome",
    ["applier_kind", "reason", "outcome"],
)
