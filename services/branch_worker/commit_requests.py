"""CommitRequests on the branch worker (P6): bind each to its GitTarget's open window, close
that window at the request's deadline with its message, and record the outcome once the
push holds it.

Kept apart from ``branch.py``: the loop calls ``receive`` for a request entry, ``finished``
after a push with the windows it pushed, and asks ``message_for`` when it commits a window.
A request is processed once (by uid): a final benign outcome in Redis makes every later
receipt (a duplicate publication, a new owner's claim) a no-op that is acknowledged. Every
outcome is written fenced by the owner's lease (``FencedOff`` once it lapsed).

A bound request whose window is not on the remote ``FINALIZE_BOUND_S`` after its deadline
(pushes refused, the branch failing, its GitTarget's signing key out) is reported
``FinalizeFailed`` (``overdue``); it stays bound, and the push that finally lands reports it
``Committed``. Its deadline is the first owner's: a new owner that claims it keeps the
deadline recorded with ``WaitingForCloseDelay``, so a branch that keeps failing and starting
over still reports it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Protocol

from shared.decide.commit_requests import (
    FINALIZE_BOUND_S,
    binding,
    close_deadline,
    finalize_failed,
)
from shared.model.attribution import Author
from shared.model.commit_requests import (
    ALREADY_PRESENT,
    BENIGN,
    COMMITTED,
    FINALIZE_FAILED,
    NO_WINDOW,
    RESOLVED,
    UNATTRIBUTED,
    WAITING,
    CommitRequestItem,
    Outcome,
)
from shared.model.times import rfc3339
from shared.store.commit_requests import CommitRequests
from shared.store.leases import Lease

log = logging.getLogger(__name__)


class Bindable(Protocol):
    """What of an open window a request binds to (``branch.OpenWindow``)."""

    author: Author | None
    deadline: float | None
    requests: list[CommitRequestItem]


class Requests(Protocol):
    """The CommitRequests of one branch as its owner uses them (``RequestDesk``)."""

    def receive(
        self, lease: Lease, request: CommitRequestItem, window: Bindable | None, tip: str
    ) -> bool: ...

    def overdue(self, lease: Lease, problem: str, held: Collection[str] = ()) -> None: ...

    def next_failure(self) -> float | None: ...

    def finished(
        self,
        lease: Lease,
        pushed: Sequence[tuple[Sequence[CommitRequestItem], str | None]],
        head: str,
    ) -> None: ...


class RequestDesk:
    """The CommitRequests of one branch, between receipt and the push that holds them."""

    def __init__(self, store: CommitRequests, branch: str, clock: Callable[[], float]) -> None:
        self._store = store
        self._branch = branch
        self._clock = clock
        #: Bound requests not finished yet: their close deadline, by uid.
        self._deadlines: dict[str, float] = {}
        #: Those requests, with their submitter (P5), by uid.
        self._bound: dict[str, CommitRequestItem] = {}
        #: Those already reported FinalizeFailed by this owner.
        self._failed: set[str] = set()

    def receive(
        self, lease: Lease, request: CommitRequestItem, window: Bindable | None, tip: str
    ) -> bool:
        """Bind ``request`` to ``window`` (its GitTarget's open window, None if there is
        none); True when bound (its entry then waits for the push), False when it is done
        already or binds to nothing (its entry is acknowledged at once). ``tip``: the
        branch's tip as this owner knows it; ``lease``: this owner's, fencing the writes."""
        known = self._store.outcome(request.uid)
        earlier = known is not None and known.reason in (WAITING, FINALIZE_FAILED)
        if known is not None and known.reason in BENIGN:
            return False  # processed once: a duplicate, or a claim after the outcome
        if window is not None and any(r.uid == request.uid for r in window.requests):
            return False  # published twice while bound here
        now = self._clock()
        reason = binding(_author_key(window.author) if window is not None else None, request.author)
        if window is None or reason:
            if reason == NO_WINDOW and earlier:
                # A previous owner bound it and its window's writes are on the remote already
                # (claimed again, they made no write): what it asked for is there.
                text = "the window's changes were on the branch already"
                outcome = Outcome(ALREADY_PRESENT, text, branch=self._branch, sha=tip, at=now)
                self._finish(lease, request, outcome)
                return False
            text = (
                "no window of this GitTarget was open"
                if reason == NO_WINDOW
                else f"the open window holds edits of another author than {request.author}"
            )
            self._finish(lease, request, Outcome(reason, text, at=now))
            return False
        deadline = close_deadline(now, request.close_delay_s)
        if earlier and known is not None and known.deadline:  # the first owner's receipt
            deadline = min(deadline, known.deadline)
        window.deadline = deadline if window.deadline is None else min(window.deadline, deadline)
        window.requests.append(request)
        self._deadlines[request.uid] = window.deadline
        self._bound[request.uid] = request
        waiting = Outcome(WAITING, at=now, deadline=window.deadline)
        self._store.record(lease, request.uid, _stamped(waiting, request))
        return True

    def overdue(self, lease: Lease, problem: str, held: Collection[str] = ()) -> None:
        """P6: report ``FinalizeFailed`` for each bound request whose window is still not on
        the remote ``FINALIZE_BOUND_S`` after its deadline (once per owner); ``problem`` says
        why, ``held`` are the uids of requests whose window is held for its signing key."""
        now = self._clock()
        for uid, deadline in self._deadlines.items():
            if uid in self._failed or not finalize_failed(deadline, now):
                continue
            why = (
                "its GitTarget's commits cannot be signed (SigningKeyInvalid)"
                if uid in held
                else problem
            )
            text = f"the window was to close at {rfc3339(deadline)} and is not pushed: {why}"
            outcome = Outcome(FINALIZE_FAILED, text, at=now, deadline=deadline)
            bound = self._bound.get(uid)
            self._store.record(lease, uid, _stamped(outcome, bound) if bound else outcome)
            self._failed.add(uid)
            log.warning(
                "commit request %s: %s",
                uid,
                text,
                extra={"branch": self._branch, "reason": FINALIZE_FAILED},
            )

    def next_failure(self) -> float | None:
        """When the next bound request becomes overdue (None: none will)."""
        times = [d + FINALIZE_BOUND_S for u, d in self._deadlines.items() if u not in self._failed]
        return min(times) if times else None

    def finished(
        self,
        lease: Lease,
        pushed: Sequence[tuple[Sequence[CommitRequestItem], str | None]],
        head: str,
    ) -> None:
        """After a push: each pushed window's requests with the commit that holds it on the
        remote (None: the window's content was there already, so ``head`` holds it)."""
        now = self._clock()
        for requests, sha in pushed:
            for request in requests:
                if sha:
                    outcome = Outcome(COMMITTED, branch=self._branch, sha=sha, at=now)
                else:
                    outcome = Outcome(
                        ALREADY_PRESENT,
                        "the window's changes were on the branch already",
                        branch=self._branch,
                        sha=head,
                        at=now,
                    )
                self._finish(lease, request, outcome)

    def _finish(self, lease: Lease, request: CommitRequestItem, outcome: Outcome) -> None:
        self._store.record(lease, request.uid, _stamped(outcome, request))
        self._deadlines.pop(request.uid, None)
        self._bound.pop(request.uid, None)
        self._failed.discard(request.uid)
        log.info(
            "commit request %s/%s: %s",
            request.namespace,
            request.name,
            outcome.reason,
            extra={"branch": self._branch, "reason": outcome.reason},
        )


def message_for(requests: Sequence[CommitRequestItem]) -> str:
    """The message a window's requests ask for ("" for the template's): the last one that
    names one (a CommitRequest's message replaces the whole message, facts §3.5)."""
    return next((r.message for r in reversed(requests) if r.message), "")


def _stamped(outcome: Outcome, request: CommitRequestItem) -> Outcome:
    """The outcome with how the request's submitter was found (P5: AuthorAttributed)."""
    submitter = request.author if request.attribution == RESOLVED else ""
    return replace(outcome, attribution=request.attribution, submitter=submitter)


def _author_key(author: Author | None) -> str:
    """A window's author as a request names one: the Kubernetes user, or ``UNATTRIBUTED``."""
    return author.username if author is not None and author.username else UNATTRIBUTED
