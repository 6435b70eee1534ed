"""Status conditions the way Flux's ``runtime/conditions`` helpers write them.

Every Flux status carries ``conditions`` (``metav1.Condition``: type, status, reason, message,
lastTransitionTime, observedGeneration). The doubles set and delete them as the controllers do:
``lastTransitionTime`` moves only when the status value flips, and every condition records the
generation it was computed for. Timestamps are RFC 3339 at one-second granularity, as
``metav1.Time`` serialises them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Condition = dict[str, Any]

READY = "Ready"
RECONCILING = "Reconciling"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


def timestamp(epoch: float) -> str:
    """``metav1.Time`` text for an epoch time: ``2024-01-29T17:22:23Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: list[Condition], kind: str) -> Condition | None:
    """The condition of type ``kind``, if present."""
    return next((c for c in conditions if c.get("type") == kind), None)


def has_status(conditions: list[Condition], kind: str, status: str) -> bool:
    """Whether condition ``kind`` is present with ``status``."""
    found = find(conditions, kind)
    return found is not None and found.get("status") == status


def is_true(conditions: list[Condition], kind: str) -> bool:
    """Whether condition ``kind`` is present with status True."""
    return has_status(conditions, kind, TRUE)


def with_reason(conditions: list[Condition], kind: str, reason: str) -> list[Condition]:
    """A copy of ``conditions`` where ``kind`` (if present) has ``reason``."""
    return [{**c, "reason": reason} if c.get("type") == kind else c for c in conditions]


def mark(
    conditions: list[Condition],
    kind: str,
    status: str,
    reason: str,
    message: str,
    *,
    generation: int,
    now: float,
) -> list[Condition]:
    """A copy of ``conditions`` with ``kind`` set; the transition time moves only on a flip."""
    old = find(conditions, kind)
    since = timestamp(now)
    if old is not None and old.get("status") == status:
        since = old.get("lastTransitionTime", since)
    new: Condition = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }
    rest = [c for c in conditions if c.get("type") != kind]
    return [new, *rest] if kind == READY else [*_ready_first(rest), new]


def delete(conditions: list[Condition], kind: str) -> list[Condition]:
    """A copy of ``conditions`` without ``kind``."""
    return [c for c in conditions if c.get("type") != kind]


def _ready_first(conditions: list[Condition]) -> list[Condition]:
    """Flux keeps Ready first (kstatus reads it there by convention)."""
    ready = [c for c in conditions if c.get("type") == READY]
    return ready + [c for c in conditions if c.get("type") != READY]
