"""The applier side of a branch (A1-A5): owe, decide on a quiet branch, send, read outcomes.

The branch's owner keeps each applier's obligations in Redis. Our pushes owe a CatchUp (Flux
only), a foreign commit owes a ForeignCommit, a consented refusal owes a Refusal. On every wake
the owner reads outcomes, hands back overdue attempts, drops obligations of GitTarget
incarnations that are gone, and sends what is owed when the branch is quiet (Q4). The attempt
is recorded before the job is enqueued, so no request is ever sent twice.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from services.branch_worker import metrics
from shared.decide.obligations import (
    ATTEMPT_DEADLINE_S,
    REASONS,
    Applier,
    Ask,
    Wait,
    cancel_refusal,
    decide,
    hand_back_if_overdue,
    keep_live,
    on_outcome,
    owe_catch_up,
    owe_foreign_commit,
    owe_refusal,
    sent,
)
from shared.decide.quiet import BranchView, is_quiet
from shared.model.config import ApplierRef, BranchConfig, TargetConfig
from shared.model.ids import BranchKey
from shared.model.requests import ApplyRequest
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore

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
        attempt_deadline_s: float = ATTEMPT_DEADLINE_S,
    ) -> None:
        self._bk = bk
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

    def _named(self) -> dict[ApplierRef, list[TargetConfig]]:
        """Appliers of this branch and the GitTargets naming each (A3: one applier, many)."""
        by_applier: dict[ApplierRef, list[TargetConfig]] = defaultdict(list)
        for target in self._configs.targets_of(self._bk):
            if target.applier is not None:
                ref = _identity(target.applier)
                by_applier[ref].append(target)
        return by_applier

    def on_pushed(self, commit: str) -> None:
        """A1: after our push, a Kustomization owes a CatchUp."""
        for ref, targets in self._named().items():
            owe = partial(owe_catch_up, commit=commit, uids=[t.uid for t in targets])
            self._appliers.update(ref.key, ref.kind, owe)

    def on_foreign(self, commit: str) -> None:
        """Q5: every applier of the branch owes a ForeignCommit."""
        for ref, targets in self._named().items():
            owe = partial(owe_foreign_commit, commit=commit, uids=[t.uid for t in targets])
            self._appliers.update(ref.key, ref.kind, owe)

    def on_refusal(self, target: TargetConfig) -> None:
        """A5/S1: a refused edit is owed a Refusal only with the GitTarget's consent."""
        if target.applier is not None:
            ref = _identity(target.applier)
            self._appliers.update(
                ref.key, ref.kind, lambda a: owe_refusal(a, target.uid, target.consents)
            )

    def on_recovery(self, target: TargetConfig) -> None:
        """A5: a GitTarget that recovered cancels its own Refusal."""
        if target.applier is not None:
            ref = _identity(target.applier)
            self._appliers.update(ref.key, ref.kind, lambda a: cancel_refusal(a, target.uid))

    def wake(self) -> None:
        """Read outcomes, then decide and send for every applier of the branch."""
        self._read_outcomes()
        view = self._view()
        self.next_wake = None
        owed: dict[str, int] = dict.fromkeys(REASONS, 0)
        for ref, targets in self._named().items():
            for reason in self._consider(ref, targets, view):
                owed[reason] += 1
        self._report(owed, view)

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

    def _read_outcomes(self) -> None:
        outcomes = self._attempts.outcomes(self._bk)
        now = self._clock()
        for ref in self._named():
            for _, outcome in outcomes:
                if outcome is not None:
                    apply = partial(
                        on_outcome,
                        token=outcome.token,
                        outcome=outcome.outcome,
                        now=now,
                        dropped=outcome.dropped,
                    )
                    self._appliers.update(ref.key, ref.kind, apply)
        self._attempts.consumed(self._bk, [entry_id for entry_id, _ in outcomes])

    def _view(self) -> BranchView:
        state = self._states.read(self._bk)
        return BranchView(
            state.observed_tip,
            state.windows_open,
            state.pending_total,
            state.push_in_flight,
            state.last_write_at,
        )

    def _consider(
        self, ref: ApplierRef, targets: list[TargetConfig], view: BranchView
    ) -> list[str]:
        now = self._clock()
        live = [t.uid for t in targets]
        periods = {str(t.uid): (t.applier.quiet_period_s if t.applier else 30.0) for t in targets}
        token = uuid.uuid4().hex
        asked: list[Ask] = []

        def change(applier: Applier) -> Applier:
            applier = hand_back_if_overdue(keep_live(applier, live), now)
            applier = _with_periods(applier, periods)
            decision = decide(applier, view, now)
            asked.clear()
            if isinstance(decision, Wait) and decision.until is not None:
                self._wake_by(decision.until)
            if isinstance(decision, Ask):
                asked.append(decision)
                return sent(applier, decision, token, now, self._deadline_s)
            return applier

        after = self._appliers.update(ref.key, ref.kind, change)
        if asked:
            self._send(ref, asked[0], token, now)
        return list(after.owes())

    def _send(self, ref: ApplierRef, ask: Ask, token: str, now: float) -> None:
        request = ApplyRequest(
            token,
            self._bk,
            self._config.url,
            self._config.branch,
            ask.commit,
            {r: sorted(u) for r, u in ask.reasons.items()},
            ref,
            now,
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


def _identity(ref: ApplierRef) -> ApplierRef:
    """The applier itself, without the GitTarget's quietPeriod (A3 merges those)."""
    return ApplierRef(ref.kind, ref.namespace, ref.name, ref.cluster_provider, 0.0)


def _with_periods(applier: Applier, periods: dict[str, float]) -> Applier:
    return replace(applier, quiet_periods=periods)
