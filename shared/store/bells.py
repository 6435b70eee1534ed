"""A branch worker's doorbell: what wakes its scheduler for a push notice or an apply outcome.

The scheduler blocks in one group read (``EventStream.read_many``) on the events of all its
idle branches. Notices (R4) and outcomes (A4) live in streams of their own, read without a
group, so they used to be polled, five times a second per worker whatever happened. Now whoever
appends one also appends the branch's key to the doorbell of the worker holding the branch's
lease (``worker:{id}:bell``, in the same Lua step: the receiver's notice store, the
dispatcher's report), and the doorbell is one more stream in the scheduler's group read: a
notice wakes its owner at once, and an idle worker sends nothing but that blocking read.

A ring is a hint, like the notice it announces: the lease holder is read when the notice is
stored, so a ring can reach a worker that is giving the branch up (its successor reads the tip
when it starts, Q5) or be lost with Redis's data (a new owner starts afresh). The scheduler
still reads notices and outcomes every ``pacing.HINTS_FALLBACK_S`` all the same, and the
steady tick (Q7) reads the tip whatever came.

A doorbell is created by its worker (with its consumer group, at the end of the stream),
never by a ring (``XADD NOMKSTREAM``): a worker that is gone leaves no key behind for rings to
grow. It lives three lease periods, renewed by the worker's heartbeat, and is deleted when the
worker leaves.
"""

from __future__ import annotations

from typing import Any

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys

#: The doorbell's consumer group: the events' own (``streams.GROUP``), since one group read
#: names one group for every stream it reads.
GROUP = "owners"
#: Rings kept per doorbell: its worker reads them within a scheduling round, so a few are
#: ever waiting; the bound keeps a worker that stopped reading from growing it.
MAX_RINGS = 100
#: A doorbell's lifetime, in lease periods, renewed by every heartbeat of its worker.
TTL_LEASES = 3
#: The ring's field: the branch key.
FIELD = "b"


def _lua_string(text: str) -> str:
    """``text`` as a Lua long-bracket literal (no escapes to get wrong)."""
    level = "=" * 4
    if f"]{level}]" in text:
        raise ValueError(f"cannot quote {text!r} for Lua")
    return f"[{level}[{text}]{level}]"


def ring_lua(keys: Keys) -> str:
    """Lua defining ``ring(lease_key, bk)``: append ``bk`` to the doorbell of the worker whose
    lease ``lease_key`` holds (``owner|token``), if it holds one and its doorbell exists.
    Scripts that store a notice or an outcome run it in the same step."""
    head, tail = keys.worker_bell("\0").split("\0")
    return f"""
local function ring(lease, bk)
  local holder = redis.call('GET', lease)
  if not holder then
    return
  end
  local owner = string.match(holder, '^(.*)|%d+$')
  if owner then
    redis.call('XADD', {_lua_string(head)} .. owner .. {_lua_string(tail)}, 'NOMKSTREAM',
               'MAXLEN', '~', {MAX_RINGS}, '*', '{FIELD}', bk)
  end
end
"""


class Bells:
    """Doorbells: a worker opens its own (``EventStream.read_rung`` reads and answers it,
    the registry renews and closes it); writers ring through ``ring_lua`` or ``ring``."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        # KEYS[1] the branch's lease; ARGV[1] the branch key
        self._ring = client.register_script(ring_lua(keys) + "ring(KEYS[1], ARGV[1])\n")

    def key(self, worker_id: str) -> str:
        """The doorbell of ``worker_id``."""
        return self._keys.worker_bell(worker_id)

    def open(self, worker_id: str, lease_s: float) -> None:
        """Create the worker's doorbell and its group, reading from now on (idempotent)."""
        key = self.key(worker_id)
        try:
            self._r.xgroup_create(key, GROUP, id="$", mkstream=True)
        except redis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise
        self._r.pexpire(key, ttl_ms(lease_s))

    def ring(self, target: Any, bk: BranchKey) -> None:
        """Ring the holder of ``bk``'s lease, on ``target`` (the client, or a pipeline that
        stores the notice or outcome the ring announces)."""
        self._ring(keys=[self._keys.branch_lease(bk)], args=[bk], client=target)


def ttl_ms(lease_s: float) -> int:
    """A doorbell's time to live, renewed by each heartbeat."""
    return int(lease_s * 1000 * TTL_LEASES)
