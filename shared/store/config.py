"""Branch and GitTarget settings as the watcher publishes them for the branch workers.

A branch and the GitTargets that write to it are published together in one transaction
(``publish_served``), so a branch worker that retires a branch with no GitTarget left
(``WorkerRegistry.retire``, atomic too) never sees a branch's settings without its GitTargets.
A GitTarget that stops being valid is withdrawn (``withdraw_target``): its settings go, its
refusals stay for its status, and the branch worker no longer writes for it. One whose only
problem is its signing key is published marked ``key_held`` instead (P6): it stays registered
with its branch, so the branch is never retired under its held writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import redis

from shared.model.config import BranchConfig, TargetConfig
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.branch_health import BranchHealth
from shared.store.branch_state import BranchStates
from shared.store.keys import Keys
from shared.store.suspension import Suspensions
from shared.store.target_health import TargetHealth

#: Refusal slots that record no refused edit: a commit template the worker could not use (T4)
#: makes the commit anyway, and a commit that did not hold its writes (``held``, D1) leaves the
#: edits to be written again, so nothing is owed a Refusal for either (A5).
NOT_AN_EDIT = frozenset({"template", "held"})
#: The reason of a refused sensitive object (M10; shared.decide.watches.SENSITIVE_RESOURCE).
SENSITIVE = "SensitiveResource"


#: ``ConfigStore.generation``: bumped when a GitTarget leaves a branch (withdrawn, forgotten).
TARGETS = "targets"
#: ``ConfigStore.generation``: bumped when a refusal is set or lifted (or its GitTarget goes).
REFUSALS = "refusals"


#: KEYS[1] a GitTarget's hash, KEYS[2] the refusals' generation; ARGV[1] the refusal's field.
#: The generation moves only when a refusal was there to lift (commits lift ``held`` each time).
_CLEAR_REFUSAL = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('INCR', KEYS[2])
end
return 0
"""


class ConfigStore:
    """Publish (watcher) and read (branch worker) branch and GitTarget settings."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._clear = client.register_script(_CLEAR_REFUSAL)

    def branch_health(self) -> BranchHealth:
        """The branches' standing stalls, over the same connection (T4)."""
        return BranchHealth(self._r, self._keys)

    def target_health(self) -> TargetHealth:
        """The GitTargets' last pushes and apply counts, over the same connection (O1)."""
        return TargetHealth(self._r, self._keys)

    def branch_states(self) -> BranchStates:
        """The branches' published states, over the same connection (P10: status.remote)."""
        return BranchStates(self._r, self._keys)

    def suspensions(self) -> Suspensions:
        """The suspended GitTargets and their backlogs, over the same connection (P7)."""
        return Suspensions(self._r, self._keys)

    def publish_branch(self, config: BranchConfig) -> BranchKey:
        """Record a branch's settings and register the branch."""
        bk = config.ref.key
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._keys.branch_meta(bk), "config", config.to_json())
        pipe.sadd(self._keys.branches, bk)
        pipe.execute()
        return bk

    def branch(self, bk: BranchKey) -> BranchConfig | None:
        """A branch's settings, if published."""
        text = self._r.hget(self._keys.branch_meta(bk), "config")
        return BranchConfig.from_json(str(text)) if text else None

    def publish_target(self, config: TargetConfig) -> None:
        """Record a GitTarget incarnation's settings under its branch."""
        bk = config.ref.key
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._keys.target(config.uid), "config", config.to_json())
        pipe.sadd(self._keys.branch_targets(bk), config.uid)
        pipe.execute()

    def publish_served(self, branch: BranchConfig, targets: list[TargetConfig]) -> BranchKey:
        """Record a branch's settings with its GitTargets' (those that changed) at once."""
        bk = branch.ref.key
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._keys.branch_meta(bk), "config", branch.to_json())
        pipe.sadd(self._keys.branches, bk)
        for config in targets:
            pipe.hset(self._keys.target(config.uid), "config", config.to_json())
            pipe.sadd(self._keys.branch_targets(config.ref.key), config.uid)
        pipe.execute()
        return bk

    def has_targets(self, bk: BranchKey) -> bool:
        """Whether any GitTarget incarnation is registered as writing to the branch (one held
        for its signing key too, P6)."""
        return bool(self._r.scard(self._keys.branch_targets(bk)))

    def withdraw_target(self, uid: GitTargetUid) -> bool:
        """Stop serving a GitTarget that is no longer valid: its settings go (so the branch
        worker drops its events unwritten) and it leaves its branch; refusals, cursors and
        ledger stay, since the GitTarget still exists. True if anything was withdrawn."""
        config = self.target(uid)
        if config is None:
            return False
        pipe = self._r.pipeline(transaction=True)
        pipe.hdel(self._keys.target(uid), "config")
        pipe.srem(self._keys.branch_targets(config.ref.key), uid)
        pipe.incr(self._keys.generation(TARGETS))
        pipe.execute()
        return True

    def target(self, uid: GitTargetUid) -> TargetConfig | None:
        """A GitTarget incarnation's settings, if published (None once it is gone)."""
        text = self._r.hget(self._keys.target(uid), "config")
        return TargetConfig.from_json(str(text)) if text else None

    def targets_of(self, bk: BranchKey) -> list[TargetConfig]:
        """Every served GitTarget incarnation writing to the branch, by uid order (two round
        trips, however many GitTargets share the branch). One registered but held for its
        signing key (``TargetConfig.key_held``, P6) is left out: it writes nothing, owes its
        applier nothing and has no watches, yet it keeps the branch (``has_targets``)."""
        uids = sorted(str(u) for u in self._r.smembers(self._keys.branch_targets(bk)))
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.target(GitTargetUid(uid)), "config")
        texts = pipe.execute() if uids else []
        configs = [TargetConfig.from_json(str(text)) for text in texts if text]
        return [config for config in configs if not config.key_held]

    def without_targets(self, bks: Sequence[BranchKey]) -> set[BranchKey]:
        """The branches among ``bks`` that no GitTarget writes to, in one round trip."""
        pipe = self._r.pipeline(transaction=False)
        for bk in bks:
            pipe.scard(self._keys.branch_targets(bk))
        counts = pipe.execute() if bks else []
        return {bk for bk, count in zip(bks, counts, strict=True) if not count}

    def forget_target(self, config: TargetConfig) -> None:
        """Drop a GitTarget incarnation that was deleted: config, refusals, cursors, ledger."""
        self._forget(config.uid, config.ref.key)

    def forget_uid(self, uid: GitTargetUid) -> None:
        """``forget_target`` by uid alone: a withdrawn GitTarget has no settings left."""
        config = self.target(uid)
        self._forget(uid, config.ref.key if config is not None else None)

    def _forget(self, uid: GitTargetUid, bk: BranchKey | None) -> None:
        cursors = list(self._r.scan_iter(self._keys.watch_cursors(uid)))
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(
            self._keys.target(uid),
            self._keys.ledger(uid),
            self._keys.ledger_recent(uid),
            self._keys.ledger_counts(uid),
            self._keys.target_backlog(uid),
            *cursors,
        )
        pipe.srem(self._keys.suspended_targets, uid)  # P7: a gone GitTarget is not suspended
        if bk is not None:
            pipe.srem(self._keys.branch_targets(bk), uid)
        pipe.incr(self._keys.generation(TARGETS))
        pipe.incr(self._keys.generation(REFUSALS))
        pipe.execute()

    def set_refusal(
        self, uid: GitTargetUid, reason: str, message: str, key: str = "folder"
    ) -> None:
        """Record that a GitTarget refused an edit (M10); the watcher reflects it in status.

        ``key`` names what is refused: ``folder`` for the whole folder, or one object, so that
        each refusal is lifted by its own recovery (the object deleted, the folder cleaned).
        """
        value = json.dumps({"reason": reason, "message": message})
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self._keys.target(uid), f"refusal:{key}", value)
        pipe.incr(self._keys.generation(REFUSALS))
        pipe.execute()

    def clear_refusal(self, uid: GitTargetUid, key: str = "folder") -> None:
        """One refusal of the GitTarget no longer stands."""
        keys = [self._keys.target(uid), self._keys.generation(REFUSALS)]
        self._clear(keys=keys, args=[f"refusal:{key}"])

    def generation(self, what: str) -> str | None:
        """The counter of ``TARGETS`` or ``REFUSALS`` (None before any change, or after
        Redis lost its data: either way unlike any value read before)."""
        value = self._r.get(self._keys.generation(what))
        return str(value) if value is not None else None

    def refusals(self, uid: GitTargetUid) -> dict[str, dict[str, str]]:
        """Every standing refusal of the GitTarget, by key."""
        raw: dict[str, str] = self._r.hgetall(self._keys.target(uid))  # type: ignore[assignment]
        return _refusals(raw)

    def first_refusals(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, dict[str, str]]:
        """``refusal`` of many GitTargets in one round trip (a reconcile pass reports every
        GitTarget); those with none are left out. A refused sensitive object comes last: its
        WatchRule shows it, and another refusal must not hide behind it."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hgetall(self._keys.target(uid))
        raws = pipe.execute() if uids else []
        found = {uid: _first(_refusals(raw)) for uid, raw in zip(uids, raws, strict=True)}
        return {uid: refusal for uid, refusal in found.items() if refusal is not None}

    def refusing(self, uids: Sequence[GitTargetUid]) -> set[GitTargetUid]:
        """The GitTargets among ``uids`` whose refusal of an edit still stands (A5), in one
        round trip."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hgetall(self._keys.target(uid))
        raws = pipe.execute() if uids else []
        return {
            uid for uid, raw in zip(uids, raws, strict=True) if set(_refusals(raw)) - NOT_AN_EDIT
        }

    def refusal(self, uid: GitTargetUid) -> dict[str, str] | None:
        """The GitTarget's first standing refusal, if any (what GitPathAccepted reports)."""
        standing = self.refusals(uid)
        return next(iter(standing.values()), None)


def _first(standing: dict[str, dict[str, str]]) -> dict[str, str] | None:
    """The first refusal, one of a sensitive object only when there is no other."""
    ordered = sorted(standing.values(), key=lambda r: r.get("reason") == SENSITIVE)
    return ordered[0] if ordered else None


def _refusals(raw: dict[str, str]) -> dict[str, dict[str, str]]:
    return {
        name.removeprefix("refusal:"): dict(json.loads(value))
        for name, value in sorted(raw.items())
        if name.startswith("refusal:")
    }


class RefusalReader:
    """``ConfigStore.first_refusals`` for a reader that asks about every GitTarget each pass
    (the watcher's status, every ``reconcile_period``): a refusal is set or lifted only through
    ``ConfigStore``, which bumps the refusals' counter, so while the counter stands still the
    answers of the last read stand, and a pass costs one read of the counter plus one per
    GitTarget not seen before (not one per GitTarget). Every ``full_every`` passes everything
    is read again all the same (a branch worker of a version that bumps nothing): 30, every 5
    minutes at the default period (each minute, it was a fifth of the idle cost at 5,000
    GitTargets, issue 29)."""

    def __init__(self, configs: ConfigStore, full_every: int = 30) -> None:
        self._configs = configs
        self._full_every = full_every
        self._generation: str | None = None
        self._passes = 0
        #: Each GitTarget's first standing refusal (None: none) as last read.
        self._known: dict[GitTargetUid, dict[str, str] | None] = {}

    def first_refusals(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, dict[str, str]]:
        """As ``ConfigStore.first_refusals``."""
        generation = self._configs.generation(REFUSALS)  # before the reads: a change after
        if generation != self._generation or self._passes % self._full_every == 0:
            self._known.clear()  # them shows at the next pass
        self._generation = generation
        self._passes += 1
        missing = [uid for uid in uids if uid not in self._known]
        if missing:
            found = self._configs.first_refusals(missing)
            self._known.update({uid: found.get(uid) for uid in missing})
        return {uid: refusal for uid in uids if (refusal := self._known.get(uid)) is not None}
