"""What a GitTarget's status and metrics say of its work (issue 26): the Ready message of a
Ready GitTarget (its last push, or where it mirrors to) and its row of the GitTarget series,
from the conditions a pass wants and what it read of the GitTarget in Redis
(``shared.store.target_health``).

What Redis holds of them is read only where it changed (``HealthView``): each pass takes the
set of changed keys (one command) and reads those GitTargets and branches alone, and those it
did not know; every one every ``FULL_EVERY_S`` all the same, and on the next pass after Redis
lost its data (C8) or a read failed (the changes it took would be lost with it). The ages the
metrics show are computed from the stored times at each scrape, so they grow between reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from services.watcher.gittarget_metrics import TargetRow
from shared.decide.conditions import READY, STALLED, TRUE, Wanted
from shared.model.crds import GitTargetView
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.target_health import Done, Observed, TargetHealth, observed

#: Longest between two reads of every GitTarget's health.
FULL_EVERY_S = 300.0  # issue 29: a safety net; at 60 s it was a fifth of the idle cost


class HealthView:
    """Every GitTarget's health as last read, read again only where it changed."""

    def __init__(self, health: TargetHealth, clock: Callable[[], float] = time.monotonic) -> None:
        self._health = health
        self._clock = clock
        self._done: dict[GitTargetUid, Done] = {}
        self._heads: dict[BranchKey, float | None] = {}
        self._full_at: float | None = None

    def forget(self) -> None:
        """Read everything again at the next pass (Redis lost its data, C8)."""
        self._full_at = None

    def observe(
        self, targets: Sequence[tuple[GitTargetUid, BranchKey]]
    ) -> dict[GitTargetUid, Observed]:
        """Every GitTarget's last push, apply counts and its branch's oldest unpushed write."""
        changed = self._health.changes()  # taken even on a full read: it reads them all
        now = self._clock()
        full = self._full_at is None or now - self._full_at >= FULL_EVERY_S
        uids = {uid for uid, _ in targets}
        branches = {bk for _, bk in targets}
        if full:
            self._done, self._heads = {}, {}
        self._done = {u: d for u, d in self._done.items() if u in uids}
        self._heads = {b: h for b, h in self._heads.items() if b in branches}
        try:
            done, heads = self._health.read(
                sorted(u for u in uids if u in changed.targets or u not in self._done),
                sorted(b for b in branches if b in changed.branches or b not in self._heads),
            )
        except BaseException:
            self._full_at = None  # what was taken is lost: read everything next time
            raise
        if full:
            self._full_at = now
        self._done.update(done)
        self._heads.update(heads)
        return {uid: observed(self._done[uid], self._heads[bk]) for uid, bk in targets}


def ready_message(target: GitTargetView, seen: Observed) -> str:
    """What a Ready GitTarget says it did: its last push, or where it mirrors to."""
    if seen.pushed is not None:
        return seen.pushed.message
    return f"mirroring into {target.path} on branch {target.branch}; nothing pushed yet"


def row_of(target: GitTargetView, wanted: list[Wanted], seen: Observed) -> TargetRow:
    """The GitTarget's row of the series: its conditions as wanted, and what Redis holds."""
    status = {w.type: w.status for w in wanted}
    return TargetRow(
        namespace=target.meta.namespace,
        name=target.meta.name,
        ready=status.get(READY) == TRUE,
        stalled=status.get(STALLED) == TRUE,
        oldest_unpushed=seen.oldest_unpushed,
        last_push=seen.pushed.at if seen.pushed is not None else None,
        applies=dict(seen.applies) if target.applier is not None else {},
    )
