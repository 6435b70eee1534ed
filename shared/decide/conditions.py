"""Status conditions: how they move, and the Ready/Reconciling/Stalled trio.

Conditions follow metav1.Condition: ``lastTransitionTime`` moves only when ``status`` moves
(a new reason or message alone keeps it), and every condition records the generation it was
computed for. The trio is derived in one place from the problems a reconcile found, with
precedence stalled > reconciling > ready, so no two writers can disagree about Ready.

``Stalled=True`` means what kstatus reads it as: nothing changes until a person changes the
object's spec. A state that heals by itself or through another object (a referenced Secret,
GitProvider, GitTarget or applier created later; a Git host back up) is ``Ready=False`` with
``Reconciling=True``, never Stalled: a problem whose reason says a referenced object is missing
(``WAITING``) heals when it appears, whatever its maker called it. A status
is written only when it differs from what is stored, which keeps resourceVersions still on a
converged cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shared.model.crds import Condition
from shared.model.times import rfc3339

READY, RECONCILING, STALLED = "Ready", "Reconciling", "Stalled"
TRUE, FALSE = "True", "False"
#: Reason of a condition that holds with nothing to report (Flux meta's ``Succeeded``).
SUCCEEDED = "Succeeded"


#: Reasons that say a referenced object does not exist (yet): the next reconcile after it is
#: created heals them, so they never stall (kstatus: Stalled is for a needed spec change).
WAITING = frozenset(
    {
        "SecretNotFound",
        "ProviderNotFound",
        "GitProviderNotFound",
        "ClusterProviderNotFound",
        "GitTargetNotFound",
        "ApplierNotFound",
        "SigningSecretNotFound",
        "TokenSecretNotFound",
        "KubeConfigSecretNotFound",
    }
)


def stalls(problem: Problem) -> bool:
    """Whether the problem needs a spec change (kstatus Stalled), not a wait."""
    return problem.permanent and problem.reason not in WAITING


@dataclass(frozen=True, slots=True)
class Problem:
    """Something that keeps an object from being Ready.

    ``permanent`` problems stall the object (a person must change its spec), unless their
    reason is one of ``WAITING``; the others are expected to heal, so the object stays
    Reconciling.
    """

    reason: str
    message: str
    permanent: bool = True


@dataclass(frozen=True, slots=True)
class Wanted:
    """A condition as a reconcile wants it, before timestamps are decided."""

    type: str
    status: str
    reason: str
    message: str = ""


def trio(
    problems: Sequence[Problem], ready_message: str = "", ready_reason: str = SUCCEEDED
) -> list[Wanted]:
    """Ready, Reconciling and Stalled for these problems (the first problem names the reason;
    without one, ``ready_reason``)."""
    stalled = next((p for p in problems if stalls(p)), None)
    healing = next((p for p in problems if not stalls(p)), None)
    if stalled is not None:
        return [
            Wanted(READY, FALSE, stalled.reason, stalled.message),
            Wanted(RECONCILING, FALSE, stalled.reason, ""),
            Wanted(STALLED, TRUE, stalled.reason, stalled.message),
        ]
    if healing is not None:
        return [
            Wanted(READY, FALSE, healing.reason, healing.message),
            Wanted(RECONCILING, TRUE, healing.reason, healing.message),
            Wanted(STALLED, FALSE, healing.reason, ""),
        ]
    return [
        Wanted(READY, TRUE, ready_reason, ready_message),
        Wanted(RECONCILING, FALSE, ready_reason, ""),
        Wanted(STALLED, FALSE, ready_reason, ""),
    ]


def merge(
    current: Iterable[Condition], wanted: Iterable[Wanted], generation: int, now: float
) -> tuple[Condition, ...]:
    """The conditions to store: ``wanted`` replaces same-type entries, others are kept.

    An entry keeps its ``lastTransitionTime`` while its status stays the same.
    """
    existing = {c.type: c for c in current}
    merged = dict(existing)
    for want in wanted:
        old = existing.get(want.type)
        since = rfc3339(now)
        if old is not None and old.status == want.status and old.last_transition_time:
            since = old.last_transition_time
        merged[want.type] = Condition(
            type=want.type,
            status=want.status,
            reason=want.reason,
            message=want.message,
            last_transition_time=since,
            observed_generation=generation,
        )
    return tuple(merged.values())


def changed(current: Sequence[Condition], merged: Sequence[Condition]) -> bool:
    """True when storing ``merged`` would change anything (order aside)."""
    return sorted(current, key=_by_type) != sorted(merged, key=_by_type)


def ready_moved(current: Iterable[Condition], merged: Iterable[Condition]) -> Condition | None:
    """The new Ready condition when its status or reason moved (worth a Kubernetes Event)."""
    old = next((c for c in current if c.type == READY), None)
    new = next((c for c in merged if c.type == READY), None)
    if new is None:
        return None
    if old is None or (old.status, old.reason) != (new.status, new.reason):
        return new
    return None


def ready_news(current: Iterable[Condition], merged: Iterable[Condition]) -> Condition | None:
    """The new Ready condition when it is worth an Event: its status or reason moved, or it
    stays True with a new message (it says what was done: "pushed 3f2a1c9: 3 objects")."""
    moved = ready_moved(current, merged)
    if moved is not None:
        return moved
    old = find(current, READY)
    new = find(merged, READY)
    if new is not None and new.status == TRUE and new.message and old is not None:
        return new if new.message != old.message else None
    return None


def find(conditions: Iterable[Condition], kind: str) -> Condition | None:
    """The condition of one type, if present."""
    return next((c for c in conditions if c.type == kind), None)


def _by_type(condition: Condition) -> str:
    return condition.type
