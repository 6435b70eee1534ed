"""A branch's published state (Q2, Q3, Q5): what siblings and the dispatcher read.

The owner writes it through the typed ``publish_*`` methods below and everyone reads it back as
one ``BranchState``; the names of the hash fields (``branch:{bk}:state``) are private to this
module, so no caller can misspell one or read a field the record does not carry. Every write by
an owner is guarded by its fencing token in one Lua script, so a worker that lost its lease
cannot publish (Q1). Pending writes are counted per worker (``pending:{worker}``), so a
sibling's pending writes count too (Q3).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from shared.decide.quiet import BranchView
from shared.model.ids import BranchKey
from shared.model.remote import RemoteVerified
from shared.store.keys import Keys
from shared.store.leases import Lease

#: How many of our own pushed shas are remembered, to tell our tips from foreign ones.
OURS_KEPT = 50

# The hash's field names: here and nowhere else.
_TIP = "observed_tip"
_TIP_READ_AT = "tip_read_at"
_OURS = "ours"
_LAST_WRITE_AT = "last_write_at"
_WINDOWS_OPEN = "windows_open"
_PUSH_IN_FLIGHT = "push_in_flight"
_FOREIGN_TIP = "foreign_tip"
_FOREIGN_AT = "foreign_at"
_PUSHED_AT = "pushed_at"
_PENDING = "pending:"
_VERIFIED = "remote_verified"

# KEYS[1] state hash, KEYS[2] fence counter, KEYS[3] (when the fields hold a verification,
# P10) the set of state hashes whose verification changed; ARGV[1] fencing token, then
# field/value pairs. Writes the fields only while the token is the newest issued (and adds the
# hash to the set); returns 1, or 0 when fenced off.
# A ``pending:{worker}`` field whose value is 0 is deleted, not kept (U3: worker ids change on
# every rollout, and a zero counts for nothing). The other fields go in one HSET: a steady tick
# writes three (issue 29: each command a script runs counts in Redis's idle cost).
_FENCED_HSET = """
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[1]) then
  return 0
end
local fields = {}
for i = 2, #ARGV, 2 do
  if string.sub(ARGV[i], 1, 8) == 'pending:' and tonumber(ARGV[i + 1]) == 0 then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    fields[#fields + 1] = ARGV[i]
    fields[#fields + 1] = ARGV[i + 1]
  end
end
if #fields > 0 then
  redis.call('HSET', KEYS[1], unpack(fields))
end
if KEYS[3] then
  redis.call('SADD', KEYS[3], KEYS[1])
end
return 1
"""

Fields = dict[str, str | int | float]
#: Most changed verifications taken in one read: more branches than an install has.
CHANGES_TAKEN = 1_000_000


@dataclass(frozen=True, slots=True)
class BranchState:
    """The published state of one branch, as read back: every field the owner writes."""

    observed_tip: str | None
    ours: tuple[str, ...]
    last_write_at: float  # 0.0 until the first decided write
    windows_open: int
    push_in_flight: bool
    pending: Mapping[str, int]  # writes pending, by worker id
    tip_read_at: float | None  # when ls-remote last read the tip (Q7)
    foreign_tip: str | None  # the latest commit found that we did not push (Q6)
    foreign_at: float | None
    #: Events in the branch's stream not yet acknowledged (read and unpushed, or unread): an
    #: acknowledged event is deleted from the stream, so this is its length.
    unacked: int = 0
    #: When the owner's last push landed (``gitops-reverser get targets``' LAST PUSH).
    pushed_at: float | None = None

    @property
    def pending_total(self) -> int:
        """Writes pending on any worker of the branch."""
        return sum(self.pending.values())

    def view(self) -> BranchView:
        """What the quietness and apply decisions read of it (Q3, Q4, D3)."""
        return BranchView(
            tip=self.observed_tip,
            windows_open=self.windows_open,
            pending_total=self.pending_total,
            push_in_flight=self.push_in_flight,
            last_write_at=self.last_write_at,
            unacked=self.unacked,
        )


class FencedOff(RuntimeError):
    """Our fencing token is stale: another worker owns the branch now."""


class BranchStates:
    """Publish (owner, fenced) and read (anyone) branch state."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._hset = client.register_script(_FENCED_HSET)

    def publish_tip(self, lease: Lease, tip: str | None, read_at: float | None = None) -> None:
        """The tip the owner last saw; ``read_at`` when it came from ls-remote (Q5, Q7) rather
        than from the owner's own fetch or push."""
        fields: Fields = {_TIP: tip or ""}
        if read_at is not None:
            fields[_TIP_READ_AT] = read_at
            if tip:  # P10: the remote's commit, read from its ref advertisement
                fields[_VERIFIED] = RemoteVerified(tip, read_at, "Fetch").to_json()
        self._write(lease, fields)

    def publish_counts(
        self, lease: Lease, windows_open: int, pending: int, last_write_at: float | None = None
    ) -> None:
        """The owner's open windows and pending writes (Q3); ``last_write_at`` when a decided
        write just restarted the quiet period (Q2)."""
        fields: Fields = {_WINDOWS_OPEN: windows_open, _PENDING + lease.owner: pending}
        if last_write_at is not None:
            fields[_LAST_WRITE_AT] = last_write_at
        self._write(lease, fields)

    def publish_push(self, lease: Lease, in_flight: bool) -> None:
        """A push started or finished (Q3: a push in flight keeps the branch busy)."""
        self._write(lease, {_PUSH_IN_FLIGHT: int(in_flight)})

    def publish_pushed(self, lease: Lease, tip: str | None, at: float | None = None) -> None:
        """A push finished at ``tip`` (at ``at``): the tip and no push in flight, in one
        write, so no reader sees the new tip beside a push still in flight (Q3)."""
        fields: Fields = {_TIP: tip or "", _PUSH_IN_FLIGHT: 0}
        if at is not None:
            fields[_PUSHED_AT] = at
        self._write(lease, fields)

    def publish_foreign(self, lease: Lease, tip: str, at: float) -> None:
        """A commit we did not push was found on the branch (Q6)."""
        self._write(lease, {_FOREIGN_TIP: tip, _FOREIGN_AT: at})

    def publish_takeover(self, lease: Lease, tip: str | None, released: Iterable[str]) -> None:
        """A new owner starts at ``tip`` with nothing open or in flight. The pending writes of
        the ``released`` workers are dropped (their fields deleted, U3): their events are the
        new owner's now, counted again as it claims them (Q1, Q3)."""
        fields: Fields = {_PENDING + worker: 0 for worker in released}
        fields.update({_TIP: tip or "", _WINDOWS_OPEN: 0, _PUSH_IN_FLIGHT: 0})
        self._write(lease, fields)

    def remember_ours(
        self, lease: Lease, sha: str, current: tuple[str, ...], at: float | None = None
    ) -> tuple[str, ...]:
        """Record a sha we pushed as the observed tip and one of ours; ``at``: when the remote
        accepted the push (P10)."""
        ours = (*current, sha)[-OURS_KEPT:]
        fields: Fields = {_TIP: sha, _OURS: json.dumps(list(ours))}
        if at is not None:
            fields[_VERIFIED] = RemoteVerified(sha, at, "Push").to_json()
        self._write(lease, fields)
        return ours

    def verified_changes(self) -> set[BranchKey]:
        """The branches whose verification (P10) changed since the last call, taken from the
        set in one command (SPOP: each change is handed to one reader; the watcher is it)."""
        taken: Any = self._r.spop(self._keys.verified_changed, CHANGES_TAKEN)
        head, tail = self._keys.branch_state(BranchKey("\0")).split("\0")
        return {
            BranchKey(str(key)[len(head) : -len(tail)])
            for key in taken or ()
            if str(key).startswith(head) and str(key).endswith(tail)
        }

    def verified_many(self, bks: Sequence[BranchKey]) -> dict[BranchKey, RemoteVerified | None]:
        """The remote commit each branch's owner last verified (P10), in one round trip."""
        pipe = self._r.pipeline(transaction=False)
        for bk in bks:
            pipe.hget(self._keys.branch_state(bk), _VERIFIED)
        texts = pipe.execute() if bks else []
        return {
            bk: RemoteVerified.from_json(str(text)) if text else None
            for bk, text in zip(bks, texts, strict=True)
        }

    def _write(self, lease: Lease, fields: Fields) -> None:
        """Write ``fields`` as the owner holding ``lease``; raises FencedOff if it is stale."""
        keys = [self._keys.branch_state(lease.branch), self._keys.branch_fence(lease.branch)]
        if _VERIFIED in fields:
            keys.append(self._keys.verified_changed)
        args: list[str | int | float] = [lease.token]
        for name, value in fields.items():
            args += [name, value]
        if not self._hset(keys=keys, args=args):
            raise FencedOff(f"branch {lease.branch}: token {lease.token} is no longer current")

    def read(self, bk: BranchKey) -> BranchState:
        """The branch's state as published (defaults when nothing was), with the length of its
        events stream read in the same round trip."""
        pipe = self._r.pipeline(transaction=True)
        pipe.hgetall(self._keys.branch_state(bk))
        pipe.xlen(self._keys.branch_events(bk))
        raw, unacked = pipe.execute()
        return BranchState(
            observed_tip=raw.get(_TIP) or None,
            ours=tuple(json.loads(raw.get(_OURS) or "[]")),
            last_write_at=float(raw.get(_LAST_WRITE_AT) or 0.0),
            windows_open=int(raw.get(_WINDOWS_OPEN) or 0),
            push_in_flight=raw.get(_PUSH_IN_FLIGHT) == "1",
            pending=_pending(raw),
            tip_read_at=_optional_float(raw.get(_TIP_READ_AT)),
            foreign_tip=raw.get(_FOREIGN_TIP) or None,
            foreign_at=_optional_float(raw.get(_FOREIGN_AT)),
            unacked=int(unacked),
            pushed_at=_optional_float(raw.get(_PUSHED_AT)),
        )


def _pending(raw: Mapping[str, str]) -> dict[str, int]:
    return {k.removeprefix(_PENDING): int(v) for k, v in raw.items() if k.startswith(_PENDING)}


def _optional_float(text: str | None) -> float | None:
    return float(text) if text else None
