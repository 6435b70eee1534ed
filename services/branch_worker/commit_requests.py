"""CommitRequests on the branch worker (P6): bind each to its GitTarget's open window, close
that window at the request's deadline with its message, and record the outcome once the
push holds it.

Kept apart from ``branch.py``: the loop calls ``receive`` for a request entry, ``finished``
after a push with the windows it pushed, and asks ``message_for`` when it commits a window.
A request is processed once (by uid): a final benign outcome in Redis makes every later
receipt (a duplicate publication, a new owner's claim) a no-op that is acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from shared.decide.commit_requests import binding, close_deadline
from shared.model.attribution import Author
from shared.model.commit_requests import (
    ALREADY_PRESENT,
    BENIGN,
    COMMITTED,
    NO_WINDOW,
    UNATTRIBUTED,
    WAITING,
    CommitRequestItem,
    Outcome,
)
from shared.store.commit_requests import CommitRequests

log = logging.getLogger(__name__)


class Bindable(Protocol):
    """What of an open window a request binds to (``branch.OpenWindow``)."""

    author: Author | None
    deadline: float | None
    requests: list[CommitRequestItem]


class RequestDesk:
    """The CommitRequests of one branch, between receipt and the push that holds them."""

    def __init__(self, store: CommitRequests, branch: str, clock: Callable[[], float]) -> None:
        self._store = store
        self._branch = branch
        self._clock = clock

    def receive(self, request: CommitRequestItem, window: Bindable | None, tip: str) -> bool:
        """Bind ``request`` to ``window`` (its GitTarget's open window, None if there is
        none); True when bound (its entry then waits for the push), False when it is done
        already or binds to nothing (its entry is acknowledged at once). ``tip``: the
        branch's tip as this owner knows it."""
        known = self._store.outcome(request.uid)
        if known is not None and known.reason in BENIGN:
            return False  # processed once: a duplicate, or a claim after the outcome
        if window is not None and any(r.uid == request.uid for r in window.requests):
            return False  # published twice while bound here
        now = self._clock()
        reason = binding(_author_key(window.author) if window is not None else None, request.author)
        if window is None or reason:
            if reason == NO_WINDOW and known is not None and known.reason == WAITING:
                # A previous owner bound it and its window's writes are on the remote already
                # (claimed again, they made no write): what it asked for is there.
                text = "the window's changes were on the branch already"
                outcome = Outcome(ALREADY_PRESENT, text, branch=self._branch, sha=tip, at=now)
                self._finish(request, outcome)
                return False
            text = (
                "no window of this GitTarget was open"
                if reason == NO_WINDOW
                else "the open window belongs to another author"
            )
            self._finish(request, Outcome(reason, text, at=now))
            return False
        deadline = close_deadline(now, request.close_delay_s)
        window.deadline = deadline if window.deadline is None else min(window.deadline, deadline)
        window.requests.append(request)
        self._store.record(request.uid, Outcome(WAITING, at=now, deadline=window.deadline))
        return True

    def finished(
        self, pushed: Sequence[tuple[Sequence[CommitRequestItem], str | None]], head: str
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
                self._finish(request, outcome)

    def _finish(self, request: CommitRequestItem, outcome: Outcome) -> None:
        self._store.record(request.uid, outcome)
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


def _author_key(author: Author | None) -> str:
    """A window's author as a request names one: the Kubernetes user, or ``UNATTRIBUTED``."""
    return author.username if author is not None and author.username else UNATTRIBUTED
