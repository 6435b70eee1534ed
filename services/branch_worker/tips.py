"""The branch's remote tip as its owner sees it (Q5-Q7): which commits are ours, when the tip
was last read, and what a tip this owner did not push is owed (a ForeignCommit, A-rules).

The owner decides when to read (a notice, a steady tick) and what to do with the work tree;
this part reads, classifies and publishes what it found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.branch_worker import metrics
from services.branch_worker.applying import ApplierDesk
from shared.decide.tips import TipKind, classify_tip, remote_trusted, steady_tick_due
from shared.store.branch_state import BranchStates
from shared.store.leases import Lease

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before

#: Reads the remote tip of the branch (ls-remote), or None when the branch does not exist.
TipReader = Callable[[], str | None]
#: When a receiver last took a verified delivery for the branch's repository (P14), or None.
DeliveredAt = Callable[[], float | None]


def never_delivered() -> float | None:
    """No receiver on record: the steady tick always reads (Q7)."""
    return None


class Tips:
    """One owner's view of its branch's remote tip."""

    def __init__(
        self,
        lease: Lease,
        *,
        states: BranchStates,
        desk: ApplierDesk,
        clock: Callable[[], float],
        read_tip: TipReader,
        steady_tick: float,
        delivered_at: DeliveredAt = never_delivered,
        trust_max_age: float = 0.0,
    ) -> None:
        self._lease = lease
        self._states = states
        self._desk = desk
        self._clock = clock
        self._read_tip = read_tip
        self._steady_tick = steady_tick
        self._delivered_at = delivered_at
        self._trust_max_age = trust_max_age
        #: The commits this branch's owners pushed (published, so a new owner knows them).
        self._ours: tuple[str, ...] = ()
        #: When the remote tip was last read (Q7: an idle branch reads it every steady tick).
        self.read_at = clock()
        #: When a steady tick last found the view trusted and read nothing (P14).
        self.trusted_at = self.read_at

    def taken(self, ours: tuple[str, ...]) -> None:
        """The owner took the branch: the commits its earlier owners pushed are ours."""
        self._ours = ours

    def pushed(self, head: str) -> None:
        """A push of ours landed ``head``: remembered as ours (the remote's commit, verified by
        the push, P10), and the appliers are told."""
        self._ours = self._states.remember_ours(self._lease, head, self._ours, at=self._clock())
        self._desk.on_pushed(head)

    def found(self, tip: str | None, observed: str | None) -> TipKind:
        """What ``tip`` is, against the tip last ``observed``: a foreign one is published and
        owed to the appliers."""
        kind = classify_tip(tip, observed, self._ours)
        if kind is TipKind.FOREIGN and tip:
            metrics.FOREIGN_COMMITS.inc()
            log.info(
                "foreign commit %s on the branch",
                tip,
                extra={"branch": self._lease.branch, "commit": tip},
            )
            self._states.publish_foreign(self._lease, tip, self._clock())
            self._desk.on_foreign(tip)
        return kind

    def read(self, observed: str | None) -> tuple[str | None, TipKind]:
        """Read the remote tip now (ls-remote) and say what it is."""
        self.read_at = self._clock()
        tip = self._read_tip()
        return tip, self.found(tip, observed)

    def due(self, busy: bool) -> bool:
        """Q7: whether the steady tick says to read the tip now. P14: not while the branch's
        receiver has delivered within the trust age (one Redis read, only when a tick is
        due): the tick is spent without a Git request, and the next is a tick later."""
        now = self._clock()
        last = max(self.read_at, self.trusted_at)
        if not steady_tick_due(last, now, self._steady_tick, busy):
            return False
        if self._trust_max_age > 0 and remote_trusted(
            self._delivered_at(), now, self._trust_max_age
        ):
            self.trusted_at = now
            return False
        return True

    def next_read(self) -> float:
        """When an idle branch's steady tick comes next (Q7; P14 may spend it unread)."""
        return max(self.read_at, self.trusted_at) + self._steady_tick
