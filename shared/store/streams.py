"""The per-branch stream of object events, read by the branch's owner in a consumer group.

An event is acknowledged only after the push that holds its write (M8), so a worker that dies
mid-window leaves its events pending, and the next owner claims every pending entry before it
reads new ones.

A healthy branch's stream keeps every event, so that with ``commitWindow: 0s`` every write
is its own commit even when edits come back to back (M6). A stalled branch's does not need
to (U1): each event carries the whole object and the API value wins whole (M5), so an object's
newest event is all that will ever be written. While a branch is recorded stalled (T4: its
pushes are refused; ``stalled-branches``), or once its stream holds ``MAX_ENTRIES``,
publishing an event deletes the object's previous entry, read or not, in the same Lua call
(``branch:{bk}:latest`` maps each object to its newest entry); ``compact`` does the same for the
entries already there when the stall is recorded. An applier's write (``may_be_withheld``)
coalesces only with the object's earlier applier writes, under a key of its own: the apply
window may withhold it (W1), and then the API edit before it is the write Git must get. Folded
into one key, a revert published before the owner read the edit deleted the edit, and the edit
was lost in Git and in the cluster. So an object holds at most two entries: its newest edit
and its newest applier write. A previous entry that an owner has read
stays in its pending list as a bare id until acknowledged; if that owner dies, the next one
claims nothing for it (XAUTOCLAIM drops deleted entries) and applies the newest entry instead.
So a branch that cannot push holds, whatever the number of edits, one event per object with
an unpushed edit (two when an applier wrote it too), plus one listing per watch (D2), and any
branch at most ``MAX_ENTRIES`` plus two per object; nothing is lost: every object's newest
state stays in the stream until a pushed commit holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from shared.decide.apply_window import may_be_withheld
from shared.model.commit_requests import COMMIT, CommitRequestItem
from shared.model.events import LISTED, Listing, ObjectEvent
from shared.model.ids import BranchKey
from shared.store import bells
from shared.store.durable import acknowledged
from shared.store.keys import Keys

#: The one consumer group per events stream: the branch's owners, one at a time (a worker's
#: doorbell has a group of the same name, so one group read takes both).
GROUP = bells.GROUP

#: A stream this long coalesces whether or not its branch is recorded stalled (U1's bound for
#: a branch nobody owns or whose stall was not recorded).
MAX_ENTRIES = 10_000

# KEYS[1] the stream, KEYS[2] its newest entry per object, KEYS[3] the branch list, KEYS[4] the
# stalled branches, KEYS[5] the suspended GitTargets, KEYS[6] the entry's GitTarget's backlog,
# KEYS[7] the changed health keys (the stream is named there when its oldest entry may have
# moved: the entry is its only one, or an entry was deleted; ``shared.store.target_health``);
# ARGV[1] the branch key, ARGV[2] the object's coalescing key, ARGV[3] the entry's GitTarget
# uid, ARGV[4..] the entry's fields. For a suspended GitTarget (P7) the entry replaces the
# object's previous one in its backlog, numbered in publishing order, and "" is returned;
# otherwise appends the entry and, on a stalled or full stream, deletes the object's previous
# one (U1), atomically.
_PUBLISH = f"""
if redis.call('SISMEMBER', KEYS[5], ARGV[3]) == 1 then
  local seq = redis.call('HINCRBY', KEYS[6], '#', 1)
  redis.call('HSET', KEYS[6], ARGV[2], cjson.encode({{seq, {{unpack(ARGV, 4)}}}}))
  return ''
end
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 4))
local old = redis.call('HGET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], id)
if old and (redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1
            or redis.call('XLEN', KEYS[1]) > {MAX_ENTRIES}) then
  redis.call('XDEL', KEYS[1], old)
  redis.call('SADD', KEYS[7], KEYS[1])
elseif redis.call('XLEN', KEYS[1]) == 1 then
  redis.call('SADD', KEYS[7], KEYS[1])
end
redis.call('SADD', KEYS[3], ARGV[1])
return id
"""

# KEYS[1] the stream, KEYS[2] its newest entry per object, KEYS[3] the changed health keys;
# ARGV: entry id, coalescing key ("" for an entry that could not be decoded), pairwise.
# Acknowledges and deletes each entry and forgets it as its object's newest, unless a newer one
# was published meanwhile; names the stream in KEYS[3] (its oldest entry may have moved).
_ACK = """
redis.call('SADD', KEYS[3], KEYS[1])
for i = 1, #ARGV, 2 do
  redis.call('XACK', KEYS[1], 'owners', ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
  if ARGV[i + 1] ~= '' and redis.call('HGET', KEYS[2], ARGV[i + 1]) == ARGV[i] then
    redis.call('HDEL', KEYS[2], ARGV[i + 1])
  end
end
return #ARGV / 2
"""


@dataclass(frozen=True, slots=True)
class Read:
    """What one group read brought: new entries per branch, and the branches whose doorbell
    rang (a notice or an outcome came for them: ``shared.store.bells``)."""

    batches: dict[BranchKey, list[StreamEntry]]
    rung: frozenset[BranchKey]


#: What a stream entry holds: an object's event, a watch's listing (D2) or a CommitRequest
#: (P6: it travels with the events it is meant to close a window of).
Published = ObjectEvent | Listing | CommitRequestItem

#: Appended to the coalescing key of an applier's write (see the module docstring).
APPLIER_WRITE = "|applier"


def coalescing_key(item: Published) -> str:
    """The key under which ``item`` replaces its predecessor where the stream coalesces."""
    key = item.coalesce_key
    if isinstance(item, ObjectEvent) and may_be_withheld(item.operation, item.managers):
        return key + APPLIER_WRITE
    return key


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """An event with its stream id, needed to acknowledge it."""

    entry_id: str
    event: ObjectEvent | None  # None when the entry could not be decoded (kept for the ack)
    #: A watch's listing (D2); with ``event`` None as read, or with one of the DELETEs the
    #: branch worker derived from it (they share the listing's id and are acknowledged with it).
    listing: Listing | None = None
    #: A CommitRequest (P6); with ``event`` and ``listing`` None.
    request: CommitRequestItem | None = None

    @property
    def coalesce_key(self) -> str:
        """The object (or watch) this entry is the newest of, "" when it could not be read."""
        item = self.listing or self.event or self.request
        return coalescing_key(item) if item is not None else ""


class EventStream:
    """Publish, read, claim and acknowledge object events of one branch."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._publish = client.register_script(_PUBLISH)
        self._ack = client.register_script(_ACK)

    def _add(self, target: Any, bk: BranchKey, item: Published) -> Any:
        fields = [part for pair in item.to_fields().items() for part in pair]
        uid = item.target.uid
        keys = [
            self._keys.branch_events(bk),
            self._keys.branch_latest(bk),
            self._keys.branches,
            self._keys.stalled_branches,
            self._keys.suspended_targets,
            self._keys.target_backlog(uid),
            self._keys.health_changed,
        ]
        args = [bk, coalescing_key(item), uid, *fields]
        return self._publish(keys=keys, args=args, client=target)

    def publish(self, bk: BranchKey, event: Published) -> str:
        """Append an event (replacing its object's previous one) and register the branch;
        returns the stream id ("" when its GitTarget is suspended and the event went to the
        GitTarget's backlog instead, P7: ``shared.store.suspension``). With ``min_replicas``, it
        returns only once that many replicas hold it (``shared.store.durable``): the watcher
        moves its cursor past an edit after this, so a failover cannot drop an edit the watch
        will not deliver again."""
        with acknowledged(self._r) as r:
            return str(self._add(r, bk, event))

    def publish_many(self, bk: BranchKey, events: Sequence[Published]) -> None:
        """Append events in order in one round trip and register the branch.

        A relist publishes every object of a watch; one round trip each made the watcher's
        side of a snapshot of 10,000 objects mostly waiting on Redis. The caller moves its
        cursor only after this returns, so a crash midway replays rather than loses (M1).
        """
        if not events:
            return
        with acknowledged(self._r) as r:
            pipe = r.pipeline(transaction=False)
            for event in events:
                self._add(pipe, bk, event)
            pipe.execute()

    def ensure_group(self, bk: BranchKey) -> None:
        """Create the consumer group (from the start of the stream) if it is missing."""
        self._ensure(self._keys.branch_events(bk), "0")

    def _ensure(self, key: str, start: str) -> None:
        try:
            self._r.xgroup_create(key, GROUP, id=start, mkstream=True)
        except redis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    def claim_pending(self, bk: BranchKey, consumer: str) -> list[StreamEntry]:
        """Take over every entry a previous owner read but did not acknowledge.

        An entry deleted meanwhile (replaced by its object's newer event, U1) is nothing to
        take: Redis 7 drops it from the pending list and names it apart, while Redis 6.2 (the
        embedded one) answers it as an empty pair, without its id, and keeps it pending
        (``_ack_deleted``); the newer event carries the whole object (M5)."""
        key, start = self._keys.branch_events(bk), "0-0"
        taken: list[StreamEntry] = []
        deleted = False
        while True:
            reply: Any = self._r.xautoclaim(key, GROUP, consumer, 0, start, count=500)
            start, messages = reply[0], reply[1]
            deleted |= any(fields is None for _, fields in messages)
            taken.extend(_decode([(i, f) for i, f in messages if f is not None]))
            if start == "0-0":
                break
        if deleted:
            self._ack_deleted(key, consumer)
        return taken

    def _ack_deleted(self, key: str, consumer: str) -> None:
        """Acknowledge the entries ``consumer`` holds that the stream no longer has (Redis 6.2
        keeps them pending after a claim and names no id)."""
        rows: Any = self._r.xpending_range(key, GROUP, "-", "+", MAX_ENTRIES, consumer)
        ids = [str(row["message_id"]) for row in rows]
        pipe = self._r.pipeline(transaction=False)
        for entry_id in ids:
            pipe.xrange(key, entry_id, entry_id)
        gone = [i for i, found in zip(ids, pipe.execute(), strict=True) if not found]
        if gone:
            self._r.xack(key, GROUP, *gone)

    def claim_stranded(self, bk: BranchKey, consumer: str) -> list[StreamEntry]:
        """Take over entries another consumer read and never acknowledged while ``consumer``
        owns the branch (M8): an owner whose lease ran out while it was paused can read new
        entries after the next owner's start claimed the pending ones, then find its lease
        lost and leave them, and nobody would ever read them again. An entry that is no longer
        its object's newest (a newer one was published, and maybe applied and pushed already)
        is acknowledged at once, since the newer one carries the whole object (M5); the others
        are returned, to be applied after what the owner holds."""
        key = self._keys.branch_events(bk)
        summary: Any = self._r.xpending(key, GROUP)
        others = [c["name"] for c in summary.get("consumers") or [] if c["name"] != consumer]
        ids: list[Any] = [
            str(row["message_id"])
            for name in others
            for row in self._r.xpending_range(key, GROUP, "-", "+", MAX_ENTRIES, name)
        ]
        if not ids:
            return []
        claimed: Any = self._r.xclaim(key, GROUP, consumer, 0, ids)
        entries = _decode([(i, f) for i, f in claimed if isinstance(f, dict)])
        newest: Any = self._r.hmget(
            self._keys.branch_latest(bk), [e.coalesce_key or "-" for e in entries]
        )
        superseded = [e for e, n in zip(entries, newest, strict=True) if n != e.entry_id]
        self.ack(bk, superseded)
        return [e for e in entries if e not in superseded]

    def read(
        self, bk: BranchKey, consumer: str, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        """New entries for this consumer (blocks up to ``block_ms`` when given)."""
        return self.read_many([bk], consumer, count, block_ms).get(bk, [])

    def read_many(
        self, bks: Sequence[BranchKey], consumer: str, count: int, block_ms: int | None
    ) -> dict[BranchKey, list[StreamEntry]]:
        """New entries of several branches in one call, blocking until any has some."""
        return self.read_rung(bks, consumer, count, block_ms).batches

    def read_rung(
        self,
        bks: Sequence[BranchKey],
        consumer: str,
        count: int,
        block_ms: int | None,
        bell: str | None = None,
    ) -> Read:
        """``read_many``, and in the same blocking read the worker's doorbell ``bell``
        (``shared.store.bells``): it returns as soon as an event or a ring comes. The rings
        read are acknowledged and deleted at once (one more round trip, only when any came)."""
        by_key = {self._keys.branch_events(bk): bk for bk in bks}
        streams: dict[Any, Any] = dict.fromkeys(by_key, ">")
        if bell is not None:
            streams[bell] = ">"
        if not streams:
            return Read({}, frozenset())
        try:
            reply: Any = self._r.xreadgroup(GROUP, consumer, streams, count=count, block=block_ms)
        except redis.ResponseError as err:
            if not _gone(err):
                raise
            # C9: a stream or its group went (Redis wiped by FLUSHALL, or replaced, or a
            # doorbell that outlived its time): made again, empty, and nothing read this time.
            # The leases went too, so the heartbeat drops these branches and whoever takes
            # them next starts afresh (claims, replays).
            for bk in bks:
                self.ensure_group(bk)
            if bell is not None:
                self._ensure(bell, "$")
            return Read({}, frozenset())
        batches: dict[BranchKey, list[StreamEntry]] = {}
        rung: set[BranchKey] = set()
        for key, messages in reply or []:
            if bell is not None and key == bell:
                rung.update(BranchKey(str(f.get(bells.FIELD, ""))) for _, f in messages if f)
                self._answer(bell, [i for i, _ in messages])
            else:
                batches[by_key[key]] = _decode(messages)
        return Read(batches, frozenset(rung))

    def _answer(self, bell: str, ids: list[str]) -> None:
        if ids:
            pipe = self._r.pipeline(transaction=False)
            pipe.xack(bell, GROUP, *ids)
            pipe.xdel(bell, *ids)
            pipe.execute()

    def ack(self, bk: BranchKey, entries: Sequence[StreamEntry]) -> None:
        """Acknowledge and delete entries whose writes are pushed (or that hold no write)."""
        if not entries:
            return
        args = [part for e in entries for part in (e.entry_id, e.coalesce_key)]
        keys = [
            self._keys.branch_events(bk),
            self._keys.branch_latest(bk),
            self._keys.health_changed,
        ]
        with acknowledged(self._r) as r:  # after a push: what it records stays recorded
            self._ack(keys=keys, args=args, client=r)

    def compact(self, bk: BranchKey) -> int:
        """U1: keep only each object's newest entry (the branch was just recorded stalled);
        returns how many entries went. Safe at any time: a superseded entry is never written."""
        key = self._keys.branch_events(bk)
        entries = _decode(self._r.xrange(key))
        wanted = [e.coalesce_key for e in entries]
        if not entries:
            return 0
        newest: list[Any] = self._r.hmget(self._keys.branch_latest(bk), wanted)
        gone = [
            e.entry_id
            for e, latest in zip(entries, newest, strict=True)
            if e.coalesce_key and latest is not None and latest != e.entry_id
        ]
        if gone:
            pipe = self._r.pipeline(transaction=True)
            pipe.xdel(key, *gone)
            pipe.sadd(self._keys.health_changed, key)
            pipe.execute()
        return len(gone)

    def pending_count(self, bk: BranchKey) -> int:
        """Entries read but not yet acknowledged, plus those not yet read."""
        key = self._keys.branch_events(bk)
        return int(self._r.xlen(key))


def _gone(err: redis.ResponseError) -> bool:
    """Whether Redis refused a group read because a stream or its group no longer exists:
    ``NOGROUP`` for a read issued after the wipe, ``UNBLOCKED`` for one blocked across it."""
    text = str(err)
    return "NOGROUP" in text or "UNBLOCKED" in text


def _decode(messages: Any) -> list[StreamEntry]:
    entries = []
    for entry_id, fields in messages:
        try:
            if isinstance(fields, dict) and fields.get("op") == LISTED:
                entries.append(StreamEntry(entry_id, None, Listing.from_fields(fields)))
                continue
            if isinstance(fields, dict) and fields.get("op") == COMMIT:
                request = CommitRequestItem.from_fields(fields)
                entries.append(StreamEntry(entry_id, None, request=request))
                continue
            event: ObjectEvent | None = ObjectEvent.from_fields(fields)
        except ValueError:
            event = None
        entries.append(StreamEntry(entry_id, event))
    return entries
