"""Branch-worker heartbeats, so that live workers can share the branches fairly (Q1), and the
branch list, from which a branch with no GitTarget left is retired.
"""

from __future__ import annotations

import redis

from shared.decide.obligations import keep_live
from shared.model.appliers import Applier
from shared.model.ids import ApplierKey, BranchKey, GitTargetUid
from shared.store.appliers import ApplierStore
from shared.store.bells import ttl_ms
from shared.store.keys import Keys
from shared.store.leases import Lease

# KEYS[1] lease, KEYS[2] the branch's GitTarget set, KEYS[3] the branch list, KEYS[4] the set
# of stalled branches (T4), KEYS[5..] the branch's other keys; ARGV[1] "owner|token", ARGV[2]
# the branch key.
# Deletes the branch only while the caller holds its lease and no GitTarget writes to it: the
# watcher publishes a GitTarget together with its branch (ConfigStore.publish_served), so a
# GitTarget published meanwhile makes this a no-op. The fence counter stays, so a branch that
# comes back later is issued tokens above any a stale owner holds (Q1).
_RETIRE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.call('SCARD', KEYS[2]) > 0 then
  return 0
end
redis.call('SREM', KEYS[3], ARGV[2])
redis.call('SREM', KEYS[4], ARGV[2])
redis.call('DEL', KEYS[1], KEYS[2], unpack(KEYS, 5))
return 1
"""


class WorkerRegistry:
    """Who is alive, and which branches exist."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._retire = client.register_script(_RETIRE)

    def heartbeat(self, worker_id: str, now: float, lease_s: float) -> int:
        """Record that ``worker_id`` is alive, and keep its doorbell (``shared.store.bells``);
        returns how many workers are alive."""
        pipe = self._r.pipeline(transaction=True)
        pipe.zadd(self._keys.workers, {worker_id: now})
        pipe.zremrangebyscore(self._keys.workers, "-inf", now - lease_s)
        pipe.zcard(self._keys.workers)
        pipe.pexpire(self._keys.worker_bell(worker_id), ttl_ms(lease_s))
        return int(pipe.execute()[2])

    def alive(self, now: float, lease_s: float) -> int:
        """How many workers sent a heartbeat within the last lease period."""
        return int(self._r.zcount(self._keys.workers, now - lease_s, "+inf"))

    def leave(self, worker_id: str) -> None:
        """A clean shutdown: stop counting this worker at once; its doorbell goes."""
        pipe = self._r.pipeline(transaction=True)
        pipe.zrem(self._keys.workers, worker_id)
        pipe.delete(self._keys.worker_bell(worker_id))
        pipe.execute()

    def branches(self) -> list[BranchKey]:
        """Every branch with work, in a stable order."""
        return sorted(BranchKey(str(b)) for b in self._r.smembers(self._keys.branches))

    def retire(self, lease: Lease) -> bool:
        """Remove a branch no GitTarget writes to any more: its events (all of GitTargets that
        are gone), notices, outcomes, state, settings, lease and stall (T4), its place in the
        branch list and in the stalled-branch set; and, in the records of the appliers its
        owners kept obligations in, what was owed to GitTarget incarnations that are gone
        (A5: ``keep_live``; a record left with nothing is deleted). A sibling branch's
        obligations in a shared Kustomization (A3) stay: the record was deleted whole before,
        which dropped them. True if it was removed; False if the lease is lost or a GitTarget
        came back."""
        bk = lease.branch
        appliers = sorted(str(ak) for ak in self._r.smembers(self._keys.branch_appliers(bk)))
        keys = [
            self._keys.branch_lease(bk),
            self._keys.branch_targets(bk),
            self._keys.branches,
            self._keys.stalled_branches,
            self._keys.branch_events(bk),
            self._keys.branch_latest(bk),
            self._keys.branch_notices(bk),
            self._keys.branch_outcomes(bk),
            self._keys.branch_state(bk),
            self._keys.branch_meta(bk),
            self._keys.branch_appliers(bk),
            self._keys.branch_stall(bk),
            self._keys.branch_api_edits(bk),
        ]
        if not self._retire(keys=keys, args=[lease.value, bk]):
            return False
        for ak in appliers:
            self._forget_gone(ApplierKey(ak))
        return True

    def _forget_gone(self, ak: ApplierKey) -> None:
        """Drop from an applier's record what it owes GitTarget incarnations that are gone."""
        text = self._r.get(self._keys.applier(ak))
        if not text:
            return
        record = Applier.from_json(str(text))
        uids = set(record.quiet_periods) | {u for us in record.owes().values() for u in us}
        pipe = self._r.pipeline(transaction=False)
        for uid in sorted(uids):
            pipe.exists(self._keys.target(GitTargetUid(uid)))
        live = [u for u, found in zip(sorted(uids), pipe.execute(), strict=True) if found]
        ApplierStore(self._r, self._keys).amend(ak, record.kind, lambda a: keep_live(a, live))
