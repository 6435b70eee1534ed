"""The applier side of a branch (A1-A5): owe, decide on a quiet branch, send, read outcomes.

The branch's owner keeps each applier's obligations in Redis. Our pushes owe a CatchUp (Flux
only), a foreign commit owes a ForeignCommit, a consented refusal owes a Refusal, a revert the
apply window withheld owes a Repair (Argo CD only, W1). On every wake
the owner reads outcomes, hands back overdue attempts, drops obligations of GitTarget
incarnations that are gone, and sends what is owed when the branch is quiet (Q4). The attempt
is recorded before the job is enqueued, so no request is ever sent twice.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from functools import partial

from services.branch_worker import metrics
from services.branch_worker.applied import AppliedReader
from shared.decide.obligations import (
    Ask,
    cancel_refusal,
    consider,
    on_outcomes,
    owe_catch_up,
    owe_foreign_commit,
    owe_refusal,
    owe_repair,
)
from shared.decide.quiet import BranchView, is_quiet
from shared.decide.tips import first_start_owes
from shared.model.appliers import REASONS, Applier, gets_repairs
from shared.model.config import ApplierRef, BranchConfig, TargetConfig, appliers_of
from shared.model.ids import ApplierKey, BranchKey
from shared.model.ledger import LastRequest
from shared.model.requests import ApplyRequest, AttemptOutcome
from shared.model.webhook import WebhookEndpoint, shared_endpoint
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.ledger import Ledger

log = logging.getLogger(__name__)


class ApplierDesk:
    """Obligations and requests of the appliers named by one branch's GitTargets."""

    def __init__(
        self,
        bk: BranchKey,
        config: BranchConfig,
        *,
        configs: ConfigStore,
        appliers: ApplierStore,
        attempts: Attempts,
        states: BranchStates,
        clock: Callable[[], float],
        attempt_deadline_s: float,
        ledger: Ledger | None = None,
    ) -> None:
        self._bk = bk
        self._ledger = ledger
        self._config = config
        self._configs = configs
        self._appliers = appliers
        self._attempts = attempts
        self._states = states
        self._clock = clock
        self._waiting_since: float | None = None
        #: When the owner should look again although nothing arrives (A2: a CatchUp's quiet
        #: period ends, a backoff expires); None when nothing waits on time.
        self.next_wake: float | None = None
        self._deadline_s = attempt_deadline_s
        self._tracked: set[ApplierKey] = set()
        #: Every applier of the branch was owed nothing and had no attempt out when the last
        #: wake decided, and nothing was owed since (only this desk owes: ``_amend``). A wake
        #: then has nothing to decide unless an outcome came: it reads the outcomes alone, not
        #: the GitTargets' settings and the branch's state (an idle branch's tick, issue 29).
        self._settled = False

    def _named(self) -> dict[ApplierRef, list[TargetConfig]]:
        """Appliers of this branch and the GitTargets naming each (A3: one applier, many)."""
        return appliers_of(self._configs.targets_of(self._bk))

    def _track(self, ref: ApplierRef) -> None:
        """Note the applier under the branch once per owner, so retiring the branch removes
        its record (its GitTargets are gone by then, so this owner could not name it)."""
        if ref.key not in self._tracked:
            self._appliers.track(self._bk, ref.key)
            self._tracked.add(ref.key)

    def _amend(self, ref: ApplierRef, change: Callable[[Applier], Applier]) -> None:
        self._settled = False
        self._track(ref)
        self._appliers.amend(ref.key, ref.kind, change)

    def on_pushed(self, commit: str) -> None:
        """A1: after our push, a Kustomization owes a CatchUp."""
        for ref, targets in self._named().items():
            owe = partial(owe_catch_up, commit=commit, uids=[t.uid for t in targets])
            self._amend(ref, owe)

    def on_foreign(self, commit: str) -> None:
        """Q5: every applier of the branch owes a ForeignCommit."""
        for ref, targets in self._named().items():
            owe = partial(owe_foreign_commit, commit=commit, uids=[t.uid for t in targets])
            self._amend(ref, owe)

    def on_first_start(self, commit: str, applied: AppliedReader) -> None:
        """Q5, A1 at the branch's very first start: an applier whose last applied commit is
        not the tip owes a ForeignCommit for it (an outside push made before this start);
        one that holds the tip owes nothing (``first_start_owes``)."""
        for ref, targets in self._named().items():
            last = applied(ref, sorted({t.namespace for t in targets}))
            if not first_start_owes(commit, last):
                continue
            log.info(
                "first start: %s %s/%s last applied %s, not the tip %s: a ForeignCommit is owed",
                ref.kind,
                ref.namespace,
                ref.name,
                last or "nothing recorded",
                commit,
                extra={"branch": self._bk, "applier": ref.key, "commit": commit},
            )
            owe = partial(owe_foreign_commit, commit=commit, uids=[t.uid for t in targets])
            self._amend(ref, owe)

    def on_refusal(self, target: TargetConfig) -> None:
        """A5/S1: a refused edit is owed a Refusal only with the GitTarget's consent."""
        ref = target.applier
        if ref is not None:
            owe = partial(owe_refusal, uid=target.uid, consents=target.consents)
            self._amend(ref, owe)

    def on_withheld(self, target: TargetConfig) -> None:
        """W1: the apply window withheld the applier's revert of an API edit in the GitTarget's
        folder (or its write of an older commit's content); Git keeps the edit (the tip), and
        an Application owes a Repair to apply it back (a
        Kustomization is repaired by the CatchUp the edit's push owes: ``owe_repair``)."""
        ref = target.applier
        if ref is not None and gets_repairs(ref.kind):
            self._amend(ref, partial(owe_repair, uid=target.uid, now=self._clock()))

    def on_recovery(self, target: TargetConfig) -> None:
        """A5: a GitTarget that recovered cancels its own Refusal."""
        ref = target.applier
        if ref is not None:
            self._amend(ref, partial(cancel_refusal, uid=target.uid))

    def wake(self) -> None:
        """Read outcomes, then decide and send for every applier of the branch (one that only
        suspended GitTargets name is decided with none: what it was owed is dropped, P7)."""
        entries = self._attempts.outcomes(self._bk)
        if self._settled and not entries:
            return  # nothing owed, nothing out, no outcome: nothing to decide
        named = appliers_of(self._configs.targets_of(self._bk), with_suspended=True)
        self._read_outcomes(named, entries)
        view = self._view()
        self.next_wake = None
        owed: dict[str, int] = dict.fromkeys(REASONS, 0)
        settled = True
        for ref, targets in named.items():
            after = self._consider(ref, targets, view)
            for reason in after.owes():
                owed[reason] += 1
            settled = settled and not after.owes() and after.attempt is None
        self._report(owed, view)
        self._settled = settled and self.next_wake is None

    def _wake_by(self, until: float) -> None:
        """Remember the earliest moment a waiting decision may change (quiet period, backoff)."""
        self.next_wake = until if self.next_wake is None else min(self.next_wake, until)

    def _report(self, owed: dict[str, int], view: BranchView) -> None:
        """O1: obligations owed and how long they have waited for quiet."""
        for reason, count in owed.items():
            metrics.OBLIGATIONS.labels(self._bk, reason).set(count)
        waiting = any(owed.values()) and not is_quiet(view)
        if not waiting:
            self._waiting_since = None
        elif self._waiting_since is None:
            self._waiting_since = self._clock()
        since = self._waiting_since
        metrics.QUIET_WAIT.labels(self._bk).set(0.0 if since is None else self._clock() - since)

    def _read_outcomes(
        self,
        named: Mapping[ApplierRef, list[TargetConfig]],
        entries: list[tuple[str, AttemptOutcome | None]],
    ) -> None:
        """A4: every new outcome (``entries``, as read) reaches every applier of the branch (an
        outcome for another applier's token changes nothing), one transaction per applier."""
        outcomes = [outcome for _, outcome in entries if outcome is not None]
        if outcomes:
            now = self._clock()
            apply = partial(on_outcomes, outcomes=outcomes, now=now)
            for ref in named:
                self._amend(ref, apply)
        self._attempts.consumed(self._bk, [entry_id for entry_id, _ in entries])

    def _view(self) -> BranchView:
        return self._states.read(self._bk).view()

    def _consider(self, ref: ApplierRef, targets: list[TargetConfig], view: BranchView) -> Applier:
        """A2-A5 for one applier: decide under the record's transaction, then act on the
        decision that was committed (send it, or remember when to look again)."""
        now = self._clock()
        token = uuid.uuid4().hex
        self._remember_overdue(ref, targets, now)
        periods = {str(t.uid): t.quiet_period_s for t in targets}
        step = partial(
            consider,
            periods=periods,
            refusing=self._refusing(targets),
            branch=view,
            now=now,
            token=token,
            deadline_s=self._deadline_s,
        )
        self._track(ref)
        after, decision = self._appliers.update(ref.key, ref.kind, step)
        if isinstance(decision, Ask):
            self._send(ref, decision, token, now, shared_endpoint(t.webhook for t in targets))
        elif decision.until is not None:
            self._wake_by(decision.until)
        return after

    def _remember_overdue(self, ref: ApplierRef, targets: list[TargetConfig], now: float) -> None:
        """Before an overdue attempt is handed back (A4, in ``consider``), keep it in the
        GitTargets' recent requests, finished now: its stamp may have landed (a dispatcher
        killed after its stamp, before its report) and its apply come seconds later. Forgotten,
        that apply met no window, and its re-create of an object deleted through the API after
        the hand-back was mirrored: the soak lost chaos-flux-0/cm-00231 (seed 483848) so."""
        if self._ledger is None:
            return
        attempt = self._appliers.load(ref.key, ref.kind).attempt
        if attempt is None or now < attempt.deadline:
            return
        entry = LastRequest(
            attempt.token,
            attempt.commit,
            tuple(sorted(attempt.reasons)),
            attempt.sent_at,
            now,
            "Failed",
            "handed back at its deadline",
        )
        self._ledger.remember([str(t.uid) for t in targets], entry)

    def _refusing(self, targets: list[TargetConfig]) -> set[str]:
        """S1/A5 at the decision: the GitTargets that consent now (``onRefusal: Reapply`` as
        the watcher last published it) and whose refusal of an edit still stands."""
        consenting = [t.uid for t in targets if t.consents]
        return {str(uid) for uid in self._configs.refusing(consenting)} if consenting else set()

    def _send(
        self, ref: ApplierRef, ask: Ask, token: str, now: float, webhook: WebhookEndpoint | None
    ) -> None:
        request = ApplyRequest(
            token,
            self._bk,
            self._config.url,
            self._config.branch,
            ask.commit,
            {r: sorted(u) for r, u in ask.reasons.items()},
            ref,
            now,
            webhook,  # D7: where a Webhook applier is POSTed; None for the other kinds
        )
        self._attempts.enqueue(request)
        log.info(
            "apply request %s to %s %s/%s: %s at %s",
            token,
            ref.kind,
            ref.namespace,
            ref.name,
            "+".join(ask.reasons),
            ask.commit[:12],
            extra={
                "branch": self._bk,
                "token": token,
                "commit": ask.commit,
                "applier": f"{ref.kind}/{ref.namespace}/{ref.name}",
            },
        )
