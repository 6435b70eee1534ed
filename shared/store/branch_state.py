"""A branch's published state (Q2, Q3, Q5): what siblings and the dispatcher read.

Fields of ``branch:{bk}:state``: ``observed_tip``, ``ours`` (JSON list of the shas we pushed
recently), ``last_write_at``, ``windows_open``, ``push_in_flight``, ``pending:{worker}`` (per
worker, so a sibling's pending writes count too) and ``owner``. Every write by an owner is
guarded by its fencing token in one Lua script, so a worker that lost its lease cannot publish.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys
from shared.store.leases import Lease

#: How many of our own pushed shas are remembered, to tell our tips from foreign ones.
OURS_KEPT = 50

# KEYS[1] state hash, KEYS[2] fence counter; ARGV[1] fencing token, then field/value pairs.
# Writes the fields only while the token is the newest issued; returns 1, or 0 when fenced off.
_FENCED_HSET = """
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[1]) then
  return 0
end
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
return 1
"""


@dataclass(frozen=True, slots=True)
class BranchState:
    """The published state of one branch, as read back."""

    observed_tip: str | None
    ours: tuple[str, ...]
    last_write_at: float
    windows_open: int
    push_in_flight: bool
    pending: Mapping[str, int]

    @property
    def pending_total(self) -> int:
        """Writes pending on any worker of the branch."""
        return sum(self.pending.values())


class FencedOff(RuntimeError):
    """Our fencing token is stale: another worker owns the branch now."""


class BranchStates:
    """Publish (owner, fenced) and read (anyone) branch state."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._hset = client.register_script(_FENCED_HSET)

    def publish(self, lease: Lease, fields: Mapping[str, str | int | float]) -> None:
        """Write ``fields`` as the owner holding ``lease``; raises FencedOff if it is stale."""
        keys = [self._keys.branch_state(lease.branch), self._keys.branch_fence(lease.branch)]
        args: list[str | int | float] = [lease.token]
        for name, value in fields.items():
            args += [name, value]
        if not self._hset(keys=keys, args=args):
            raise FencedOff(f"branch {lease.branch}: token {lease.token} is no longer current")

    def remember_ours(self, lease: Lease, sha: str, current: tuple[str, ...]) -> tuple[str, ...]:
        """Record a sha we pushed as the observed tip and one of ours."""
        ours = (*current, sha)[-OURS_KEPT:]
        self.publish(lease, {"observed_tip": sha, "ours": json.dumps(list(ours))})
        return ours

    def read(self, bk: BranchKey) -> BranchState:
        """The branch's state as published (defaults when nothing was)."""
        raw: dict[str, str] = self._r.hgetall(self._keys.branch_state(bk))  # type: ignore[assignment]
        pending = {k.split(":", 1)[1]: int(v) for k, v in raw.items() if k.startswith("pending:")}
        return BranchState(
            observed_tip=raw.get("observed_tip") or None,
            ours=tuple(json.loads(raw.get("ours") or "[]")),
            last_write_at=float(raw.get("last_write_at") or 0.0),
            windows_open=int(raw.get("windows_open") or 0),
            push_in_flight=raw.get("push_in_flight") == "1",
            pending=pending,
        )
