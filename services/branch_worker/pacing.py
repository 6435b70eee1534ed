"""When an owned branch gets a pass although nothing new came for it (Q7, P6, U1), and how long
the scheduler may block on new events meanwhile.

A branch is passed when it was not worked since it was taken, when its own deadline has come
(``BranchLoop.next_deadline``: a window closes, an applier's wait ends, the steady tick, a held
GitTarget's key retry), or every ``RETRY_S`` while it holds unpushed work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from services.branch_worker.branch import BranchLoop
from shared.model.ids import BranchKey

#: Longest the scheduler blocks on new events (and its doorbell) while nothing is running or
#: due: a round a second, the pace of its look for branches to take (``taking.py``). A
#: notice or an outcome rings the doorbell (``shared.store.bells``), so none waits for this.
IDLE_BLOCK_S = 1.0
#: How often the idle branches' notices and outcomes are read although no ring came (one read
#: each for all of them): the bound on a hint whose ring was lost (a ring is a hint too).
HINTS_FALLBACK_S = 5.0
#: Longest the scheduler blocks on new events while a pass is running: a branch whose pass
#: ends waits at most this long for its next one.
BUSY_POLL_S = 0.02
#: How often a branch with something unpushed (a push that failed every attempt) tries again.
RETRY_S = 0.2


class Pacing:
    """The scheduler's clock for its owned branches."""

    def __init__(self, clock: Callable[[], float], loops: Mapping[BranchKey, BranchLoop]) -> None:
        self._clock = clock
        self._loops = loops  # the scheduler's: read only
        #: When each branch's last pass ran (none yet: a pass is due at once).
        self._last_pass: dict[BranchKey, float] = {}

    def passed(self, bk: BranchKey) -> None:
        """A pass over ``bk`` ran."""
        self._last_pass[bk] = self._clock()

    def forget(self, bk: BranchKey) -> None:
        """The scheduler dropped ``bk``."""
        self._last_pass.pop(bk, None)

    def due(self, bk: BranchKey, now: float) -> bool:
        """Whether a pass is due for ``bk`` without anything new (see the module)."""
        last = self._last_pass.get(bk)
        if last is None:
            return True
        loop = self._loops[bk]
        if loop.retrying() and now - last >= RETRY_S:
            return True
        deadline = loop.next_deadline()
        return deadline is not None and deadline <= now

    def wait_time(self, idle: list[BranchKey], busy: bool) -> float:
        """How long the scheduler may block on new events for the ``idle`` branches (``busy``:
        a pass is running) before one of them is due."""
        now = self._clock()
        waits = [BUSY_POLL_S if busy else IDLE_BLOCK_S]
        for bk in idle:
            loop = self._loops[bk]
            if loop.retrying():
                waits.append(self._last_pass.get(bk, now) + RETRY_S - now)
            deadline = loop.next_deadline()
            if deadline is not None:
                waits.append(deadline - now)
        return max(min(waits), 0.0)


class Hints:
    """Which idle branches' notices and apply outcomes the scheduler reads this round: those
    whose doorbell rang (remembered while the branch's pass runs, read once it is idle), and
    every idle branch's each ``HINTS_FALLBACK_S``. Nothing else: an idle worker polls none."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._rung: set[BranchKey] = set()
        self._read_at: float | None = None

    def rang(self, bks: Iterable[BranchKey]) -> None:
        """The doorbell rang for ``bks``: a notice or an outcome came for each."""
        self._rung.update(bks)

    def forget(self, bk: BranchKey) -> None:
        """The scheduler dropped ``bk``."""
        self._rung.discard(bk)

    def due(self, idle: list[BranchKey]) -> list[BranchKey]:
        """The branches among ``idle`` whose notices and outcomes to read now."""
        now = self._clock()
        if self._read_at is None or now - self._read_at >= HINTS_FALLBACK_S:
            self._read_at = now
            wanted = list(idle)
        else:
            wanted = [bk for bk in idle if bk in self._rung]
        self._rung.difference_update(wanted)
        return wanted
