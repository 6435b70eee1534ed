"""CommitRequest rules (P6): binding to a window, its close, the conditions, the TTL.

Pure: the branch worker and the watcher hand in what they know and act on the answer.
"""

from __future__ import annotations

from shared.decide.conditions import FALSE, READY, RECONCILING, STALLED, TRUE, Problem, Wanted
from shared.model.commit_requests import (
    ALREADY_PRESENT,
    BENIGN,
    COMMITTED,
    FINAL,
    FINALIZE_FAILED,
    NO_WINDOW,
    RESOLVED,
    UNATTRIBUTED,
    UNRESOLVED,
    WAITING,
    WINDOW_MISMATCH,
    Outcome,
)
from shared.model.crds import Condition
from shared.model.times import parse_rfc3339, rfc3339

PUSHED, AUTHOR_ATTRIBUTED = "Pushed", "AuthorAttributed"
#: AuthorAttributed's reasons (P5): attribution is off for the GitTarget's ClusterProvider; the
#: submitter is the user of the audit fact of the request's create; no such fact arrived within
#: the grace (the Go operator's name for a submitter record that is absent).
AUTHOR_CAPTURE_DISABLED = "AuthorCaptureDisabled"
ATTRIBUTED_FROM_AUDIT = "AttributedFromAudit"
COMMITTER_FALLBACK = "CommitterFallback"
UNKNOWN = "Unknown"
#: Published to the branch, not yet received by its owner.
PROGRESSING = "Progressing"
#: The GitTarget named does not exist in the request's namespace (P6: Stalled).
TARGET_NOT_FOUND = "GitTargetNotFound"
#: The GitTarget exists but is not served (invalid, or its GitProvider is); P6: it may heal.
TARGET_NOT_READY = "GitTargetNotReady"


def binding(window_author: str | None, request_author: str) -> str:
    """P6: "" when a request binds to its GitTarget's open window (``window_author`` None:
    none is open), else the benign reason it binds to nothing. A request never closes a window
    of another author. A request whose submitter is not known (``UNATTRIBUTED``: attribution
    is off, or no audit fact of its create arrived within the grace) binds to the open window
    whoever's it is; a known submitter binds only to a window of the same user (an unresolved
    window's author is not the submitter)."""
    if window_author is None:
        return NO_WINDOW
    if request_author not in (UNATTRIBUTED, window_author):
        return WINDOW_MISMATCH
    return ""


def close_deadline(received_at: float, close_delay_s: int) -> float:
    """P6: the bound window closes at receipt plus the request's delay, whatever its own
    rolling timer says (a window that times out earlier closes earlier, with the request)."""
    return received_at + max(0, close_delay_s)


#: How long after a bound request's deadline its window's commit and push may take before the
#: request shows FinalizeFailed (Ready=False, Stalled=True): the push of a branch whose remote
#: refuses it is retried every pass meanwhile, so a passing refusal (a CAS race, a remote
#: restarting) is not reported. A later push that lands lifts it (Committed).
FINALIZE_BOUND_S = 60.0


def finalize_failed(deadline: float, now: float, bound_s: float = FINALIZE_BOUND_S) -> bool:
    """P6: a bound request whose window is not on the remote ``bound_s`` after the close it
    asked for (``deadline``) has failed to finalize (for now: it is lifted if the push lands)."""
    return now >= deadline + bound_s


def conditions(outcome: Outcome | None, problem: Problem | None) -> list[Wanted]:
    """P6: the conditions of a request from what the branch worker recorded (``outcome``) or
    what keeps it from reaching a branch (``problem``; a permanent one stalls it)."""
    attributed = submitter_condition(outcome)
    if problem is not None:
        return [
            *_trio(problem.reason, problem.message, problem.permanent),
            _pushed(False, problem.reason, problem.message),
            Wanted(AUTHOR_ATTRIBUTED, UNKNOWN, problem.reason, "not received by a branch worker"),
        ]
    if outcome is None:
        text = "waiting for the branch worker to receive the request"
        return [*_trio(PROGRESSING, text, False), _pushed(False, PROGRESSING, text), attributed]
    if outcome.reason == WAITING:
        text = f"the window closes at {rfc3339(outcome.deadline)}"
        return [*_trio(WAITING, text, False), _pushed(False, WAITING, text), attributed]
    if outcome.reason == FINALIZE_FAILED:
        return [
            *_trio(FINALIZE_FAILED, outcome.message, True),
            _pushed(False, FINALIZE_FAILED, outcome.message),
            attributed,
        ]
    message = outcome.message
    if outcome.reason == COMMITTED:
        message = f"commit {outcome.sha} pushed to {outcome.branch}"
    ready = [
        Wanted(READY, TRUE, outcome.reason, message),
        Wanted(RECONCILING, FALSE, outcome.reason, ""),
        Wanted(STALLED, FALSE, outcome.reason, ""),
    ]
    pushed = outcome.reason in (COMMITTED, ALREADY_PRESENT)
    return [*ready, _pushed(pushed, outcome.reason, message), attributed]


def submitter_condition(outcome: Outcome | None) -> Wanted:
    """P5, P6: AuthorAttributed from how the branch worker found the request's submitter
    (Unknown until it received the request)."""
    if outcome is None:
        text = "decided when the branch worker receives the request"
        return Wanted(AUTHOR_ATTRIBUTED, UNKNOWN, PROGRESSING, text)
    if outcome.attribution == RESOLVED:
        text = f"submitted by {outcome.submitter} (the audit event of its create)"
        return Wanted(AUTHOR_ATTRIBUTED, TRUE, ATTRIBUTED_FROM_AUDIT, text)
    if outcome.attribution == UNRESOLVED:
        text = (
            "no audit event of its create arrived within the grace: "
            "it binds to the open window, whoever's edits it holds"
        )
        return Wanted(AUTHOR_ATTRIBUTED, FALSE, COMMITTER_FALLBACK, text)
    text = (
        "attribution is not enabled for its GitTarget's ClusterProvider: "
        "it binds to the open window, whoever's edits it holds"
    )
    return Wanted(AUTHOR_ATTRIBUTED, FALSE, AUTHOR_CAPTURE_DISABLED, text)


def _trio(reason: str, message: str, permanent: bool) -> list[Wanted]:
    if permanent:
        return [
            Wanted(READY, FALSE, reason, message),
            Wanted(RECONCILING, FALSE, reason, ""),
            Wanted(STALLED, TRUE, reason, message),
        ]
    return [
        Wanted(READY, FALSE, reason, message),
        Wanted(RECONCILING, TRUE, reason, message),
        Wanted(STALLED, FALSE, reason, ""),
    ]


def _pushed(pushed: bool, reason: str, message: str) -> Wanted:
    return Wanted(PUSHED, TRUE if pushed else FALSE, reason, message)


def concluded(current: tuple[Condition, ...] | list[Condition]) -> bool:
    """P6: True when the request's status already holds a branch worker's final outcome (its
    Ready condition's reason is one of ``FINAL``). Such a request is never published again:
    its outcome in Redis may be gone (a Redis wiped or replaced, the 2026-12-06 probe's N10),
    and received again it would bind to the next window and title an unrelated commit."""
    ready = next((c for c in current if c.type == READY), None)
    return ready is not None and ready.reason in FINAL


def finished_at(current: tuple[Condition, ...] | list[Condition]) -> float | None:
    """When a request's status became final (its Ready condition's last transition), or
    None while it is not: Ready with a final reason, or Stalled."""
    ready = next((c for c in current if c.type == READY), None)
    stalled = next((c for c in current if c.type == STALLED), None)
    final = ready is not None and (
        (ready.status == TRUE and ready.reason in BENIGN)
        or (ready.status == FALSE and ready.reason in FINAL)
        or (stalled is not None and stalled.status == TRUE)
    )
    if not final or ready is None:
        return None
    if stalled is not None and stalled.status == TRUE:  # Ready may have been False before
        return parse_rfc3339(stalled.last_transition_time)
    return parse_rfc3339(ready.last_transition_time)


def expired(current: tuple[Condition, ...] | list[Condition], now: float, ttl_s: float) -> bool:
    """P6: a finished request is deleted ``ttl_s`` after it finished (the Go operator keeps
    them for ever)."""
    done = finished_at(current)
    return done is not None and now >= done + ttl_s
