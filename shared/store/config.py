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
from shared.store.keys import Keys

#: Refusal slots that record no refused edit: a commit template the worker could not use (T4)
#: makes the commit anyway, and a commit that did not hold its writes (``held``, D1) leaves the
#: edits to be written again, so nothing is owed a Refusal for either (A5).
NOT_AN_EDIT = frozenset({"template", "held"})


class ConfigStore:
    """Publish (watcher) and read (branch worker) branch and GitTarget settings."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def branch_health(self) -> BranchHealth:
        """The branches' standing stalls, over the same connection (T4)."""
        return BranchHealth(self._r, self._keys)

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
        pipe.delete(self._keys.target(uid), self._keys.ledger(uid), *cursors)
        if bk is not None:
            pipe.srem(self._keys.branch_targets(bk), uid)
        pipe.execute()

    def set_refusal(
        self, uid: GitTargetUid, reason: str, message: str, key: str = "folder"
    ) -> None:
        """Record that a GitTarget refused an edit (M10); the watcher reflects it in status.

        ``key`` names what is refused: ``folder`` for the whole folder, or one object, so that
        each refusal is lifted by its own recovery (the object deleted, the folder cleaned).
        """
        value = json.dumps({"reason": reason, "message": message})
        self._r.hset(self._keys.target(uid), f"refusal:{key}", value)

    def clear_refusal(self, uid: GitTargetUid, key: str = "folder") -> None:
        """One refusal of the GitTarget no longer stands."""
        self._r.hdel(self._keys.target(uid), f"refusal:{key}")

    def refusals(self, uid: GitTargetUid) -> dict[str, dict[str, str]]:
        """Every standing refusal of the GitTarget, by key."""
        raw: dict[str, str] = self._r.hgetall(self._keys.target(uid))  # type: ignore[assignment]
        return _refusals(raw)

    def first_refusals(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, dict[str, str]]:
        """``refusal`` of many GitTargets in one round trip (a reconcile pass reports every
        GitTarget); those with none are left out."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hgetall(self._keys.target(uid))
        raws = pipe.execute() if uids else []
        found = {
            uid: next(iter(_refusals(raw).values()), None)
            for uid, raw in zip(uids, raws, strict=True)
        }
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


def _refusals(raw: dict[str, str]) -> dict[str, dict[str, str]]:
    return {
        name.removeprefix("refusal:"): dict(json.loads(value))
        for name, value in sorted(raw.items())
        if name.startswith("refusal:")
    }
