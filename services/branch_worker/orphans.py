"""Branches no GitTarget writes to any more, found by their owner and retired after a grace.

The owner looks at all its idle branches at once, in one round trip, every ``CHECK_EVERY_S``
(not once per branch per pass: an idle branch has no pass of its own). A GitTarget leaves a
branch only through the watcher, which bumps a counter when it does (``ConfigStore.generation``):
while the counter stands still and every idle branch had a GitTarget at the last look, the
check is that one read, not a read per branch; a full look is made at least every
``FULL_CHECK_EVERY_S`` all the same (a watcher of a version that bumps nothing).

A branch counts as an orphan from the first check that finds it without a GitTarget; one
found with a GitTarget again starts over. The grace is longer than the watcher's reconcile
pass (10 s by default), so a publisher that writes a branch before its GitTarget, or a
GitTarget deleted and created again, never loses its branch in between.

A branch listed without settings (events published, settings never, or gone) cannot be leased
for work; a worker that has room for it notes it here too, and retires it once the grace is
over, so no listed branch stays for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from shared.model.ids import BranchKey
from shared.store.config import TARGETS, ConfigStore

#: How often an owner checks whether any GitTarget still writes to its idle branches.
CHECK_EVERY_S = 5.0
#: How long a branch must have had no GitTarget (or no settings) before it is retired.
GRACE_S = 30.0
#: Longest between two looks at every idle branch, whatever the counter says.
FULL_CHECK_EVERY_S = 300.0  # a safety net (issue 29: at 60 s, a SCARD per idle branch a minute)


class Orphans:
    """When each branch was first found without a GitTarget (or without settings)."""

    def __init__(self, configs: ConfigStore, clock: Callable[[], float]) -> None:
        self._configs = configs
        self._clock = clock
        self._since: dict[BranchKey, float] = {}
        self._checked_at: float | None = None
        #: The counter, when, and the branches found with a GitTarget, at the last full look.
        self._generation: str | None = None
        self._full_at = -float("inf")
        self._with_targets: set[BranchKey] = set()

    def next_check(self) -> float:
        """When the owned branches are due to be checked again."""
        return -float("inf") if self._checked_at is None else self._checked_at + CHECK_EVERY_S

    def to_retire(self, idle: Sequence[BranchKey]) -> list[BranchKey]:
        """Among the owner's ``idle`` branches, those whose grace is over (checked at most every
        ``CHECK_EVERY_S``; none between checks)."""
        now = self._clock()
        if now < self.next_check():
            return []
        self._checked_at = now
        generation = self._configs.generation(TARGETS)  # before the look: a change after it
        if (  # is seen at the next check (None: never bumped; a wipe drops the leases too)
            generation == self._generation
            and not self._since
            and self._with_targets.issuperset(idle)
            and now - self._full_at < FULL_CHECK_EVERY_S
        ):
            return []  # no GitTarget left any branch since every one of these had one
        self._generation, self._full_at = generation, now
        orphans = self._configs.without_targets(idle)
        self._with_targets = set(idle) - orphans
        for bk in idle:
            if bk not in orphans:
                self._since.pop(bk, None)
        return [bk for bk in sorted(orphans) if self._over(bk, now)]

    def unconfigured(self, bk: BranchKey) -> bool:
        """A listed branch has no settings: True once that has lasted the grace."""
        return self._over(bk, self._clock())

    def _over(self, bk: BranchKey, now: float) -> bool:
        return now - self._since.setdefault(bk, now) >= GRACE_S

    def forget(self, bk: BranchKey) -> None:
        """The branch was dropped, retired or configured: start over if it comes back."""
        self._since.pop(bk, None)
