"""Branch leases with fencing tokens (Q1).

One worker at a time owns a branch. A lease is ``SET NX PX``; taking it issues a fencing token
(an ever-increasing counter), and every write a worker makes as owner carries the token, so a
worker that lost its lease while paused (GC, a slow push) cannot overwrite its successor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys

# KEYS[1] lease key, KEYS[2] fence counter; ARGV[1] owner id, ARGV[2] lease period in ms.
# Returns the new fencing token, or 0 when another owner holds the lease.
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local token = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
  return token
end
return 0
"""
# KEYS[1] lease key; ARGV[1] "owner|token", ARGV[2] lease period in ms. 1 = renewed, 0 = lost.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# KEYS[1..n] lease keys; ARGV[1] lease period in ms, ARGV[2..n+1] "owner|token" of each.
# One MGET for every lease, then a PEXPIRE for each still ours: a worker's heartbeat costs
# n + 2 commands (one GET and one PEXPIRE each, plus the call, as n scripts cost 3n).
# Returns 1 (renewed) or 0 (lost) per lease, in order.
_RENEW_MANY = """
local values = redis.call('MGET', unpack(KEYS))
local answers = {}
for i = 1, #KEYS do
  if values[i] == ARGV[i + 1] then
    answers[i] = redis.call('PEXPIRE', KEYS[i], ARGV[1])
  else
    answers[i] = 0
  end
end
return answers
"""
#: Leases renewed by one call of ``_RENEW_MANY`` (Lua's ``unpack`` is bounded by its stack).
RENEW_BATCH = 1000
# KEYS[1] lease key; ARGV[1] "owner|token". Deletes only our own lease.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


@dataclass(frozen=True, slots=True)
class Lease:
    """A held lease: the branch, who holds it, and the fencing token it was issued."""

    branch: BranchKey
    owner: str
    token: int

    @property
    def value(self) -> str:
        """What the lease key holds while this lease is valid."""
        return f"{self.owner}|{self.token}"


class Leases:
    """Take, renew and give back branch leases."""

    def __init__(self, client: redis.Redis, keys: Keys, period_ms: int) -> None:
        self._r = client
        self._keys = keys
        self._period_ms = period_ms
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._renew_many = client.register_script(_RENEW_MANY)
        self._release = client.register_script(_RELEASE)

    def acquire(self, bk: BranchKey, owner: str) -> Lease | None:
        """Take the branch if nobody holds it."""
        keys = [self._keys.branch_lease(bk), self._keys.branch_fence(bk)]
        token = int(self._acquire(keys=keys, args=[owner, self._period_ms]))
        return Lease(bk, owner, token) if token else None

    def renew(self, lease: Lease) -> bool:
        """Extend our lease; False means it was lost and the branch must be dropped."""
        keys = [self._keys.branch_lease(lease.branch)]
        return bool(self._renew(keys=keys, args=[lease.value, self._period_ms]))

    def renew_many(self, leases: Sequence[Lease]) -> list[bool]:
        """``renew`` for every lease in one round trip (the heartbeat's renewal of all of a
        worker's branches); each answer says whether that lease is still held."""
        answers: list[bool] = []
        for start in range(0, len(leases), RENEW_BATCH):
            batch = leases[start : start + RENEW_BATCH]
            keys = [self._keys.branch_lease(lease.branch) for lease in batch]
            args: list[str | int] = [self._period_ms, *(lease.value for lease in batch)]
            answers.extend(bool(a) for a in self._renew_many(keys=keys, args=args))
        return answers

    def holders(self, bks: Sequence[BranchKey]) -> list[str | None]:
        """Who holds each branch now (``owner|token``, None when nobody does), in one MGET:
        a worker looking for branches to take asks only after the free ones."""
        if not bks:
            return []
        values = self._r.mget([self._keys.branch_lease(bk) for bk in bks])
        return [str(v) if v is not None else None for v in values]

    def release(self, lease: Lease) -> None:
        """Give the branch back at once (clean shutdown), if it is still ours."""
        self._release(keys=[self._keys.branch_lease(lease.branch)], args=[lease.value])

    def holder(self, bk: BranchKey) -> str | None:
        """Who holds the branch now (``owner|token``), if anyone."""
        value = self._r.get(self._keys.branch_lease(bk))
        return str(value) if value is not None else None

    def current_token(self, bk: BranchKey) -> int:
        """The newest fencing token issued for the branch (0 if never leased)."""
        return int(self._r.get(self._keys.branch_fence(bk)) or 0)
