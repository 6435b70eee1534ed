"""Writes and events held while a GitTarget's commits cannot be signed (P6, T4, M8).

Two holds, each asked again every ``SIGNING_RETRY_S``:

- ``Holds``: windows of GitTargets whose signing key cannot be used. Their changes stay
  uncommitted in the work tree and their events unacknowledged; a GitTarget whose folder
  overlaps a held one's is held with it (a commit of its folder would take the held writes
  unsigned).
- ``Parking``: events of GitTargets the watcher withdrew while their key is out (their settings
  are gone): not applied, not acknowledged, handled again later.

The owner (``branch.py``) decides what is committed when; these parts keep what waits and
when it is tried again, and show the hold on the GitTarget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.branch_worker.conditions import Conditions
from services.branch_worker.signing import SIGNING_KEY_INVALID, SigningUnavailable
from services.branch_worker.windows import OpenWindow, join_held, overlap
from shared.git.errors import GitTemporary
from shared.model.config import TargetConfig
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.streams import StreamEntry

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before

#: How long the writes of a GitTarget whose signing key cannot be used are held before its
#: key is asked for again (one Secret read per held GitTarget each time).
SIGNING_RETRY_S = 10.0


class Holds:
    """The held windows of one branch, per GitTarget, and when each is tried again."""

    def __init__(
        self, branch: BranchKey, conditions: Conditions, clock: Callable[[], float]
    ) -> None:
        self._branch = branch
        self._conditions = conditions
        self._clock = clock
        #: Per GitTarget, its held windows oldest first, one author each (P5: windows of one
        #: author that meet in the hold merge; another author's stays a commit of its own).
        self._held: dict[GitTargetUid, list[OpenWindow]] = {}
        self._retry_at: dict[GitTargetUid, float] = {}

    def any(self) -> bool:
        """Whether any write is held."""
        return bool(self._held)

    def uids(self) -> list[GitTargetUid]:
        """The held GitTargets, sorted."""
        return sorted(self._held)

    def retry_times(self) -> list[float]:
        """When each held GitTarget's key is asked for again."""
        return list(self._retry_at.values())

    def due(self, now: float, force: bool) -> list[GitTargetUid]:
        """The held GitTargets whose key is to be asked for again now."""
        return [u for u, at in self._retry_at.items() if force or at <= now]

    def pending(self) -> int:
        """How many events the held windows hold."""
        return sum(len(w.entries) for ws in self._held.values() for w in ws)

    def request_uids(self) -> set[str]:
        """The CommitRequests bound to held windows (P6)."""
        return {r.uid for ws in self._held.values() for w in ws for r in w.requests}

    def blocker(self, target: TargetConfig) -> TargetConfig | None:
        """A held GitTarget whose folder is, holds or is inside ``target``'s (``target``
        itself first): a commit of ``target``'s folder would take its held, unsigned writes."""
        held = self._held.get(target.uid)
        if held:
            return held[-1].target
        for windows in self._held.values():
            if overlap(windows[-1].target.path, target.path):
                return windows[-1].target
        return None

    def hold(
        self, window: OpenWindow, blocker: TargetConfig, err: SigningUnavailable | None
    ) -> None:
        """P6, T4, M8: a GitTarget that asks for signed commits never gets an unsigned one, and
        its writes are never dropped. A key the API could not give now fails the pass (the
        branch starts over and tries again). A Secret that is gone or holds no usable key holds
        the window: its changes stay uncommitted in the work tree, its events stay pending in
        the stream (a new owner claims and replays them), the GitTarget shows
        ``SigningKeyInvalid``, and its key is asked for again every ``SIGNING_RETRY_S``; once
        it works, every held write is committed, signed, and pushed. Later windows of the
        GitTarget join the hold. The branch's other GitTargets are committed and pushed as
        usual, except one whose folder overlaps a held one's (``blocker``): it is held with
        it, since a commit of its folder would take the held writes unsigned."""
        if err is not None and not err.permanent:
            raise GitTemporary(str(err)) from err
        target = window.target
        uid = target.uid
        join_held(self._held.setdefault(uid, []), window)
        if err is None and uid in self._retry_at:
            return  # joined a standing hold
        self._retry_at[uid] = self._clock() + SIGNING_RETRY_S
        if err is not None:
            message = str(err)
        else:
            message = (
                f"held with GitTarget {blocker.namespace}/{blocker.name}: its folder overlaps "
                "this one's and its commits cannot be signed"
            )
        self._conditions.signing_held(uid, message)
        log.warning(
            "holding %d event(s) unacknowledged: %s",
            sum(len(w.entries) for w in self._held[uid]),
            message,
            extra={
                "branch": self._branch,
                "gittarget": f"{target.namespace}/{target.name}",
                "reason": SIGNING_KEY_INVALID,
            },
        )

    def group(self, due: list[GitTargetUid]) -> list[GitTargetUid]:
        """The due GitTargets and every held one whose folder overlaps one of theirs (each is
        held while another is, so one alone never goes), sorted."""
        group = set(due)
        grew = True
        while grew:
            more = {
                uid
                for uid, w in self._held.items()
                if uid not in group
                and any(overlap(w[-1].target.path, self._held[g][-1].target.path) for g in group)
            }
            group |= more
            grew = bool(more)
        return sorted(group)

    def take(self, uid: GitTargetUid, newer: OpenWindow | None) -> list[OpenWindow]:
        """A held GitTarget's windows out of the hold, with its open window ``newer`` last
        (merged into the last held one when it is the same author's)."""
        windows = self._held.pop(uid)
        self._retry_at.pop(uid, None)
        if newer is not None:
            join_held(windows, newer, newer.window)
        return windows

    def keep(self, uid: GitTargetUid, windows: list[OpenWindow]) -> None:
        """Held again, as taken: tried again after ``SIGNING_RETRY_S``."""
        self._held[uid] = windows
        self._retry_at[uid] = self._clock() + SIGNING_RETRY_S

    def release_all(self) -> list[tuple[GitTargetUid, list[OpenWindow], float]]:
        """Every held GitTarget's windows, with when it was to be tried, out of the hold (M7:
        a replay makes them again on the new tip and ``rejoin`` puts back what is left)."""
        now = self._clock()
        out = [(uid, ws, self._retry_at.get(uid, now)) for uid, ws in self._held.items()]
        self._held, self._retry_at = {}, {}
        return out

    def rejoin(self, uid: GitTargetUid, windows: list[OpenWindow], retry_at: float) -> None:
        """Windows released by ``release_all`` back in the hold, joining one the replay made
        meanwhile (a window whose key fails now)."""
        joined = self._held.get(uid)
        if joined is None:
            self._held[uid] = windows
            self._retry_at[uid] = retry_at
            return
        for window in windows:
            join_held(joined, window)


class Parking:
    """Events of GitTargets withdrawn while their signing key is out (P6, M8)."""

    def __init__(self, conditions: Conditions, clock: Callable[[], float]) -> None:
        self._conditions = conditions
        self._clock = clock
        #: Not applied, not acknowledged, handled again every ``SIGNING_RETRY_S``.
        self._entries: list[StreamEntry] = []
        self.retry_at: float | None = None
        #: Per slice: whether a GitTarget without settings is withdrawn for its key.
        self._withdrawn: dict[GitTargetUid, bool] = {}

    def any(self) -> bool:
        """Whether any event is parked."""
        return bool(self._entries)

    def count(self) -> int:
        """How many events are parked."""
        return len(self._entries)

    def new_slice(self) -> None:
        """A new slice of events: the GitTargets' settings are read again."""
        self._withdrawn.clear()

    def park(self, entry: StreamEntry, target: TargetConfig | None) -> bool:
        """An event of a GitTarget that is not served: dropped (False) if it is gone; kept
        unacknowledged (True) if it is held for its signing key, until it is served again
        (P6, M8). The watcher publishes such a GitTarget marked ``key_held``, still registered
        with the branch, so a new owner takes the branch and keeps its events; one withdrawn
        without the mark (by an older watcher) is told by its standing ``signing`` refusal
        (withdrawal keeps refusals, deletion does not)."""
        item = entry.listing or entry.event
        assert item is not None
        uid = item.target.uid
        if uid not in self._withdrawn:
            self._withdrawn[uid] = self._conditions.withdrawn_for_key(uid, target)
        if not self._withdrawn[uid]:
            return False
        self._entries.append(entry)
        if self.retry_at is None:
            self.retry_at = self._clock() + SIGNING_RETRY_S
        return True

    def due(self, now: float, force: bool) -> list[StreamEntry]:
        """The parked events, out of the parking, when it is time to handle them again."""
        if self.retry_at is None or not (force or self.retry_at <= now):
            return []
        entries, self._entries = self._entries, []
        self.retry_at = None
        return entries
