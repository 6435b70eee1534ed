"""The apply window at the branch (W1-W3): withhold the applier's revert of an API edit.

``shared.decide.apply_window`` decides; this module gathers what it decides on and acts:

- the applier's window: its latest request *sent by the time of the write*
  (``shared.decide.apply_window.write_bound``: the applier's ``managedFields`` second, when the
  watcher observed it, now), among the attempt out (its ``sent_at`` in the applier's record)
  and the GitTarget's recent finished requests (``sent_at``/``finished_at`` in the ledger the
  dispatcher writes when the attempt ends, S3, which keeps the last ``RECENT``). Only that one
  counts: an edit made after an older request but before it is in the commit it applies, so
  its apply is no revert (judging it against the older window would withhold a correct apply).
  A request sent after the write does not count either: judging by the latest request at
  reading time mirrored a revert whose event came late (the watcher or Redis down), once a
  newer request (sent after the edit) had gone out;
- when the API side last edited each object: the time the watcher observed the last event
  that was not the applier's alone. It is kept in this owner's memory and in Redis
  (``shared.store.api_edits``, written before the event can be acknowledged), so a branch
  taken again (its worker killed, or its lease lost while Redis was away) still withholds the
  revert of an edit its previous owner saw; without the store a new owner forgot the edit and
  mirrored the revert, losing the edit in Git and in the cluster.

The guard also withholds, as ``historical``, an applier-only write that brings back what Git
held at an older commit instead of the tip's content (the applier applied an artifact older
than the tip; ``shared.decide.apply_window``). The caller passes how to find that out
(``older_only``, which reads the branch's history through ``shared.git``); it is called only
when the decision depends on it (``asks_history``): an applier-only write, inside an open
window, with no API edit since the request was sent.

Only a write that changes a value can revert an edit (W2): the caller passes how to find out
whether Git (the work tree: the tip with the pending writes) already holds the event's object
as it is (``unchanged``), asked only for an event the window would otherwise withhold or count.
Such a write is mirrored (it makes no write, M3) and is no collision; its ``managedFields``
time, which did not move, is never taken for the time of a revert.

A withheld event is not mirrored (the caller acknowledges it as no write, and owes an Argo CD
Application a Repair: ``ApplierDesk.on_withheld``); every collision is
logged, counted in ``apply_window_collisions_total{outcome}`` and kept for ``inspect`` (W3).
An API edit to an object of a GitTarget with an applier costs one Redis write; store reads
happen only for an event the applier's own manager wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from services.branch_worker import metrics
from services.branch_worker.writer import key_of
from shared.decide.apply_window import (
    AFTER_FINISH_S,
    EDIT_BY,
    ApplyWindow,
    Decision,
    Verdict,
    applier_user,
    asks_change,
    asks_history,
    decide,
    is_api_edit,
    managers_of,
    window_in_force,
    write_bound,
)
from shared.model.config import ApplierRef, TargetConfig
from shared.model.events import ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.ledger import LastRequest
from shared.store.api_edits import ApiEdits
from shared.store.appliers import ApplierStore
from shared.store.collisions import Collision, Collisions
from shared.store.ledger import Ledger

log = logging.getLogger(__name__)

#: How long an API edit is remembered: past any attempt's deadline (5 minutes, D6) and the
#: window's 10 s after it, so no edit a window could need is forgotten.
REMEMBER_S = 900.0

EditKey = tuple[str, str, str, str, str]


def _no() -> bool:
    """Nothing is known: no proof (W2)."""
    return False


@dataclass(frozen=True, slots=True)
class GitView:
    """What the branch's Git says of one event's object, asked only when a verdict depends on
    it: whether it is what Git held at an older commit but not at the tip (``older_only``,
    a history read), and whether the work tree holds it as it is (``unchanged``)."""

    older_only: Callable[[], bool] = _no
    unchanged: Callable[[], bool] = _no


@dataclass(frozen=True, slots=True)
class Tie:
    """The facts that may decide a same-second tie (W2): the writers by the watch's order,
    whether the write's audit fact names the applier's user, whether attribution is on."""

    writers: frozenset[str] | None
    audit_by_applier: bool | None
    attribution: bool


class Admission(Protocol):
    """Whether a branch mirrors an object event (``ApplyWindowGuard``, W1)."""

    def is_tie(self, target: TargetConfig, event: ObjectEvent) -> bool: ...

    def admits(
        self,
        target: TargetConfig,
        event: ObjectEvent,
        older_only: Callable[[], bool] = _no,
        unchanged: Callable[[], bool] = _no,
        audit_user: str | None = None,
    ) -> bool: ...


class ApplyWindowGuard:
    """Judges one branch's object events against their appliers' apply windows."""

    def __init__(
        self,
        bk: BranchKey,
        *,
        appliers: ApplierStore,
        ledger: Ledger,
        collisions: Collisions,
        edits: ApiEdits,
        clock: Callable[[], float],
        enabled: bool = True,
    ) -> None:
        self._bk = bk
        self._appliers = appliers
        self._ledger = ledger
        self._collisions = collisions
        self._edits = edits
        self._clock = clock
        self._enabled = enabled  # False only in tests (BranchJobs' apply_window)
        self._edited: dict[EditKey, float] = {}
        self._recent_by_target: dict[GitTargetUid, tuple[int, list[LastRequest]]] = {}

    def is_tie(self, target: TargetConfig, event: ObjectEvent) -> bool:
        """Whether ``event`` is a same-second tie between the applier of its GitTarget and
        another manager (W2), which the audit fact of its write may decide: the caller waits
        for that fact before ``admits`` when attribution is on."""
        ref = target.applier
        if not self._enabled or ref is None or event.operation == "DELETE":
            return False
        names = {m.manager for m in event.managers}
        own = managers_of(ref.kind)
        return bool(names & own) and not names <= own

    def admits(
        self,
        target: TargetConfig,
        event: ObjectEvent,
        older_only: Callable[[], bool] = _no,
        unchanged: Callable[[], bool] = _no,
        audit_user: str | None = None,
    ) -> bool:
        """True to mirror ``event``; False when the apply window withholds it (W1).
        ``older_only`` says whether the event's object is what Git held at an older commit
        but not at the tip; ``unchanged`` whether Git already holds it as it is (a write that
        changes no value, W2); each is asked only when the decision depends on it.
        ``audit_user``: the user the audit fact of this very write names (attribution on,
        its uid and resourceVersion matched), which decides a tie the watch's order does not."""
        ref = target.applier
        if not self._enabled or ref is None:
            return True
        key: EditKey = (target.uid, *key_of(event))
        if is_api_edit(event.operation, event.managers, ref.kind):
            decision = Decision(Verdict.MIRROR, "an API edit")
            if self.is_tie(target, event):  # W2: a fact may say it is the applier's write
                tie = Tie(
                    None if event.writers is None else frozenset(event.writers),
                    None if audit_user is None else applier_user(ref.kind, audit_user),
                    bool(target.audit_route),
                )
                decision = self._judge(
                    ref, target, event, key, GitView(unchanged=unchanged), tie=tie
                )
                if EDIT_BY in decision.why:
                    self._edit_by_fact(ref, target, event, decision)
            if decision.mirrored:  # a revert the facts gave to the applier is no API edit
                self._remember(key, event.observed_at)
        else:
            decision = self._judge(ref, target, event, key, GitView(older_only, unchanged))
        if decision.collision:
            self._report(ref, target, event, decision)
        return decision.mirrored

    def _judge(
        self,
        ref: ApplierRef,
        target: TargetConfig,
        event: ObjectEvent,
        key: EditKey,
        git: GitView,
        *,
        tie: Tie | None = None,
    ) -> Decision:
        """W1-W2 for one event; the work tree and the branch's history are read only when
        the verdict depends on them (``asks_change``, ``asks_history``)."""
        written = write_bound(event.managers, event.observed_at, self._clock())
        window = window_in_force(self._windows(ref, target), written)
        edited_at = self._edited_at(key)
        asked = asks_history(
            operation=event.operation,
            newest=event.managers,
            applier_kind=ref.kind,
            window=window,
            api_edited_at=edited_at,
            now=written,
        )
        older = asked and git.older_only()
        same = (
            asks_change(
                operation=event.operation,
                newest=event.managers,
                applier_kind=ref.kind,
                window=window,
                api_edited_at=edited_at,
                now=written,
                older_only=older,
            )
            and git.unchanged()
        )
        return decide(
            operation=event.operation,
            newest=event.managers,
            applier_kind=ref.kind,
            window=window,
            api_edited_at=edited_at,
            now=written,
            older_only=older,
            unchanged=same,
            writers=None if tie is None else tie.writers,
            audit_by_applier=None if tie is None else tie.audit_by_applier,
            attribution=tie is not None and tie.attribution,
        )

    def _windows(self, ref: ApplierRef, target: TargetConfig) -> list[ApplyWindow]:
        """The applier's requests a write may belong to: the attempt out (unless the ledger
        holds it finished already) and the GitTarget's recent finished ones."""
        recent = self._recent(target.uid)
        windows = [ApplyWindow(r.sent_at, r.finished_at) for r in recent]
        if not recent:  # an entry written before ``recent`` existed
            try:
                last, _ = self._ledger.last_request(target.uid)
            except ValueError:
                last = None
            windows += [] if last is None else [ApplyWindow(last.sent_at, last.finished_at)]
        attempt = self._appliers.load(ref.key, ref.kind).attempt
        if attempt is not None and attempt.token not in {r.token for r in recent}:
            windows.append(ApplyWindow(attempt.sent_at))
        return windows

    def _recent(self, uid: GitTargetUid) -> list[LastRequest]:
        """The GitTarget's recent requests, read and decoded again only when the ledger entry's
        version moved: an apply of a thousand objects is a thousand applier events, and the
        entry (up to ``RECENT`` requests) is one small version read for each instead of the
        whole list and its decoding. The version is read first, so a request recorded between
        the two reads is kept under the older version and read again next time."""
        version = self._ledger.versions([uid])[uid]
        cached = self._recent_by_target.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1]
        recent = self._ledger.recent(uid)
        self._recent_by_target[uid] = (version, recent)
        return recent

    def _edited_at(self, key: EditKey) -> float | None:
        """The last API edit of the object this owner or a previous one saw."""
        seen = (self._edited.get(key), self._edits.last(self._bk, key))
        return max((at for at in seen if at is not None), default=None)

    def _remember(self, key: EditKey, at: float) -> None:
        self._edited[key] = max(at, self._edited.get(key, at))
        self._edits.remember(self._bk, key, at, REMEMBER_S + AFTER_FINISH_S)
        horizon = self._clock() - REMEMBER_S - AFTER_FINISH_S
        if len(self._edited) % 256 == 0:  # now and then, drop what no window can need
            self._edited = {k: t for k, t in self._edited.items() if t >= horizon}

    def _edit_by_fact(
        self, ref: ApplierRef, target: TargetConfig, event: ObjectEvent, decision: Decision
    ) -> None:
        """W2: a same-second tie a fact gave to the editor is mirrored and is no collision;
        its line (INFO, outcome ``edit``) says which fact decided it, beside the collisions'."""
        oid = event.object_id
        subject = "/".join(p for p in (oid.kind, oid.namespace, oid.name) if p)
        log.info(
            "apply window: edit %s (%s)",
            subject,
            decision.why,
            extra={
                "branch": self._bk,
                "applier": f"{ref.kind}/{ref.namespace}/{ref.name}",
                "gittarget": f"{target.namespace}/{target.name}",
                "object": subject,
                "outcome": "edit",
            },
        )

    def _report(
        self, ref: ApplierRef, target: TargetConfig, event: ObjectEvent, decision: Decision
    ) -> None:
        """W3: log, count and keep one collision."""
        oid = event.object_id
        subject = "/".join(p for p in (oid.kind, oid.namespace, oid.name) if p)
        applier = f"{ref.kind}/{ref.namespace}/{ref.name}"
        outcome = decision.verdict.value
        metrics.APPLY_WINDOW_COLLISIONS.labels(outcome).inc()
        log.warning(
            "apply window: %s %s (%s)",
            outcome,
            subject,
            decision.why,
            extra={
                "branch": self._bk,
                "applier": applier,
                "gittarget": f"{target.namespace}/{target.name}",
                "object": subject,
                "outcome": outcome,
            },
        )
        self._collisions.record(
            self._bk,
            Collision(
                self._clock(),
                outcome,
                subject,
                f"{target.namespace}/{target.name}",
                applier,
                decision.why,
            ),
        )
