"""What each GitTarget last did, for its status message, its Events and its metrics (O1).

The branch worker records each push of a GitTarget's commits (``record_pushes``: the commit,
how many objects it wrote, when), in the GitTarget incarnation's hash, so the record goes with
the rest of its keys (``ConfigStore.forget_uid``). The dispatcher's ledger script counts the
GitTarget's finished apply requests by outcome beside its ledger entry (``Keys.ledger_counts``,
``shared.store.ledger``).
The watcher reads both (``observe``, one round trip for every GitTarget), with the oldest
entry of each branch's events stream: entries are deleted when the push that holds their
writes lands (M8), so the stream's first entry is the oldest API edit of the branch that is not
in Git yet.

Every writer of one of these names the key it changed in ``changed:health`` in the same round
trip (the push record here, the counts in the ledger's script, the stream in the event
stream's publish, acknowledge, compact and resume scripts when its oldest entry may have
moved), and the watcher's reconcile pass takes that set (``changes``, one command) and reads
only what it names (``read``), everything once a minute: reading every GitTarget each pass was
most of an idle install's Redis commands (issue 29).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.model.ids import BranchKey, GitTargetUid
from shared.store.connection import Client
from shared.store.keys import Keys

#: Most changed keys taken in one read: more than an install has.
CHANGES_TAKEN = 1_000_000
#: The outcomes of an apply request (``shared.model.appliers.Outcome``), as counted.
OUTCOMES = ("Delivered", "Stale", "NothingToAsk", "Failed")
_PUSHED = "pushed"


@dataclass(frozen=True, slots=True)
class Push:
    """One push that carried commits of a GitTarget."""

    sha: str
    objects: int
    at: float

    def to_json(self) -> str:
        return json.dumps({"sha": self.sha, "objects": self.objects, "at": self.at})

    @classmethod
    def from_json(cls, text: str) -> Push | None:
        """The record, or None when it does not decode (never fatal to a pass)."""
        try:
            raw = json.loads(text)
            return cls(str(raw["sha"]), int(raw["objects"]), float(raw["at"]))
        except (ValueError, KeyError, TypeError):
            return None

    @property
    def message(self) -> str:
        """What was done, as the Ready message and the Event say it."""
        noun = "object" if self.objects == 1 else "objects"
        return f"pushed {self.sha[:7]}: {self.objects} {noun}"


@dataclass(frozen=True, slots=True)
class Done:
    """What one GitTarget did: its last push and its apply counts."""

    pushed: Push | None = None
    #: Finished apply requests by outcome (every outcome present, 0 when none).
    applies: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Changed:
    """What changed since the last ``TargetHealth.changes``: GitTargets whose push record or
    apply counts moved, branches whose oldest unpushed write may have."""

    targets: frozenset[GitTargetUid] = frozenset()
    branches: frozenset[BranchKey] = frozenset()


@dataclass(frozen=True, slots=True)
class Observed:
    """What a pass learned about one GitTarget besides its objects."""

    pushed: Push | None = None
    #: Finished apply requests by outcome (every outcome present, 0 when none).
    applies: Mapping[str, int] = field(default_factory=dict)
    #: When the oldest unpushed write of its branch was published (None: none waits).
    oldest_unpushed: float | None = None


class TargetHealth:
    """Push records and apply counts of GitTargets, and their branches' oldest unpushed write."""

    def __init__(self, client: Client, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def record_pushes(self, pushes: Mapping[GitTargetUid, Push]) -> None:
        """Record the push that carried each GitTarget's commits (one round trip)."""
        if not pushes:
            return
        pipe = self._r.pipeline(transaction=False)
        for uid, push in pushes.items():
            pipe.hset(self._keys.target(uid), _PUSHED, push.to_json())
            pipe.sadd(self._keys.health_changed, self._keys.target(uid))
        pipe.execute()

    def changes(self) -> Changed:
        """What changed since the last call, taken from ``changed:health`` in one command
        (SPOP: each change is handed to one reader; the watcher is it)."""
        taken: Any = self._r.spop(self._keys.health_changed, CHANGES_TAKEN)
        names = [str(k) for k in taken or ()]
        pushed = _named(names, self._keys.target(GitTargetUid("\0")))
        counted = _named(names, self._keys.ledger_counts(GitTargetUid("\0")))
        streams = _named(names, self._keys.branch_events(BranchKey("\0")))
        return Changed(
            frozenset(GitTargetUid(u) for u in pushed | counted),
            frozenset(BranchKey(b) for b in streams),
        )

    def read(
        self, uids: Sequence[GitTargetUid], branches: Sequence[BranchKey]
    ) -> tuple[dict[GitTargetUid, Done], dict[BranchKey, float | None]]:
        """These GitTargets' last push and apply counts, and these branches' oldest unpushed
        write (None: none waits), in one round trip (none when asked for nothing)."""
        if not uids and not branches:
            return {}, {}
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.target(uid), _PUSHED)
            pipe.hmget(self._keys.ledger_counts(uid), list(OUTCOMES))
        for bk in branches:
            pipe.xrange(self._keys.branch_events(bk), count=1)
        answers = pipe.execute()
        done: dict[GitTargetUid, Done] = {}
        for i, uid in enumerate(uids):
            pushed, counts = answers[2 * i], answers[2 * i + 1]
            done[uid] = Done(
                pushed=Push.from_json(str(pushed)) if pushed else None,
                applies={o: int(c or 0) for o, c in zip(OUTCOMES, counts, strict=True)},
            )
        heads = answers[2 * len(uids) :]
        return done, {bk: _entry_time(h) for bk, h in zip(branches, heads, strict=True)}

    def observe(
        self, targets: Sequence[tuple[GitTargetUid, BranchKey]]
    ) -> dict[GitTargetUid, Observed]:
        """Every GitTarget's last push, apply counts and its branch's oldest unpushed write."""
        done, heads = self.read([u for u, _ in targets], sorted({bk for _, bk in targets}))
        return {uid: observed(done[uid], heads[bk]) for uid, bk in targets}


def observed(done: Done, oldest_unpushed: float | None) -> Observed:
    """A GitTarget's health from what it did and its branch's oldest unpushed write."""
    return Observed(done.pushed, done.applies, oldest_unpushed)


def _named(names: Sequence[str], pattern: str) -> set[str]:
    """The ids in ``names`` that fill the ``\\0`` of the key ``pattern``."""
    head, tail = pattern.split("\0")
    return {
        n[len(head) : len(n) - len(tail)]
        for n in names
        if n.startswith(head) and n.endswith(tail) and len(n) > len(head) + len(tail)
    }


def _entry_time(head: list[tuple[str, object]]) -> float | None:
    """The publication time of a stream's first entry (its id's milliseconds), if any."""
    if not head:
        return None
    millis, _, _ = str(head[0][0]).partition("-")
    try:
        return int(millis) / 1000.0
    except ValueError:
        return None
