"""Suspended GitTargets and what their watches collect meanwhile (P7, M8).

``spec.suspend: true`` stops a GitTarget's writes while its watches keep collecting. The
watcher marks the GitTarget suspended here; from then on the events stream's publish (one Lua
call, ``shared.store.streams``) puts each of its events in the GitTarget's backlog instead of
on the branch's stream, replacing the object's previous one there (the API value wins whole,
M5, so an object's newest event is all that will ever be written; U1's rule). The backlog
keeps the order things were published in, so a watch's listing (D2) still comes after the
objects it lists. Resuming moves the backlog onto the branch's stream, in that order, and
unmarks the GitTarget in the same Lua call, so no event published meanwhile can overtake an
older one: the branch's owner then commits the final state of everything edited while the
GitTarget was suspended, and nothing was acknowledged before a push held it.

What was already on the branch's stream when the GitTarget was suspended is written as usual:
the watcher's suspension takes effect from the next event it publishes.
"""

from __future__ import annotations

import redis

from shared.model.ids import BranchKey, GitTargetUid
from shared.store.keys import Keys
from shared.store.streams import MAX_ENTRIES

# KEYS[1] the branch's stream, KEYS[2] its newest entry per object, KEYS[3] the branch list,
# KEYS[4] the stalled branches, KEYS[5] the suspended GitTargets, KEYS[6] the GitTarget's
# backlog, KEYS[7] the changed health keys (the stream is named there when entries moved:
# ``shared.store.target_health``); ARGV[1] the branch key, ARGV[2] the GitTarget uid. Unmarks
# the GitTarget and appends its backlog to the stream in publishing order, as the publish
# script appends one entry (U1 on a stalled or full stream); returns how many entries moved.
_RESUME = f"""
redis.call('SREM', KEYS[5], ARGV[2])
local all = redis.call('HGETALL', KEYS[6])
local items = {{}}
for i = 1, #all, 2 do
  if all[i] ~= '#' then
    local value = cjson.decode(all[i + 1])
    table.insert(items, {{value[1], all[i], value[2]}})
  end
end
table.sort(items, function(a, b) return a[1] < b[1] end)
for _, item in ipairs(items) do
  local id = redis.call('XADD', KEYS[1], '*', unpack(item[3]))
  local old = redis.call('HGET', KEYS[2], item[2])
  redis.call('HSET', KEYS[2], item[2], id)
  if old and (redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1
              or redis.call('XLEN', KEYS[1]) > {MAX_ENTRIES}) then
    redis.call('XDEL', KEYS[1], old)
  end
end
redis.call('DEL', KEYS[6])
if #items > 0 then
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('SADD', KEYS[7], KEYS[1])
end
return #items
"""


class Suspensions:
    """Mark GitTargets suspended, and resume them with what they collected."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._resume = client.register_script(_RESUME)

    def suspended(self) -> set[GitTargetUid]:
        """The GitTargets marked suspended."""
        members = self._r.smembers(self._keys.suspended_targets)
        return {GitTargetUid(str(uid)) for uid in members}

    def suspend(self, uid: GitTargetUid) -> None:
        """From now on the GitTarget's events wait in its backlog."""
        self._r.sadd(self._keys.suspended_targets, uid)

    def resume(self, uid: GitTargetUid, bk: BranchKey) -> int:
        """Unmark the GitTarget and move its backlog onto its branch's stream, atomically;
        returns how many events moved."""
        keys = [
            self._keys.branch_events(bk),
            self._keys.branch_latest(bk),
            self._keys.branches,
            self._keys.stalled_branches,
            self._keys.suspended_targets,
            self._keys.target_backlog(uid),
            self._keys.health_changed,
        ]
        return int(self._resume(keys=keys, args=[bk, uid]))

    def backlog_size(self, uid: GitTargetUid) -> int:
        """How many objects' events wait in the GitTarget's backlog."""
        return max(0, int(self._r.hlen(self._keys.target_backlog(uid))) - 1)

    def forget(self, uid: GitTargetUid) -> None:
        """The GitTarget is gone: its mark and its backlog go (nothing of it is written)."""
        pipe = self._r.pipeline(transaction=True)
        pipe.srem(self._keys.suspended_targets, uid)
        pipe.delete(self._keys.target_backlog(uid))
        pipe.execute()
