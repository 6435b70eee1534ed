"""The receiver's side of the notice streams: append a verified delivery's notices, once.

A notice is a hint (R4, Q5), so each branch's stream is capped (``MAXLEN ~``): losing an old
hint costs nothing, the branch reads its tip on the steady tick anyway (Q7). A delivery id is
remembered in the same Lua step that appends its notices, so a replayed delivery (the host
retrying, or a user pressing "redeliver") stores nothing new, and a delivery is never half
stored. A delivery without an id cannot be told from a new one and is always stored.

The replay guards are bounded (U2): one sorted set per GitProvider (id -> when it was
received), whose entries older than ``SEEN_FOR`` are dropped and which keeps at most
``MAX_GUARDS`` ids (the oldest go first), so a flood of distinct deliveries costs one
GitProvider's set and nothing more. An id pushed out early by a flood is, at worst, one more
notice: one more tip read, never an apply.
The branch worker reads the streams with ``shared.store.notice_reader``; both sides go through
``PushNotice``'s codec.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

import redis
from redis.exceptions import NoScriptError

from shared.model.notices import PushNotice
from shared.store.bells import Bells, ring_lua
from shared.store.direct import ThreadConnections
from shared.store.durable import acknowledged, min_replicas
from shared.store.errors import unavailable_as_error
from shared.store.keys import Keys

#: Notices kept per branch. The owner reads them within a wake, so a thousand is far more than
#: ever wait; a bound keeps a flood of deliveries from growing Redis.
MAX_NOTICES = 1000
#: How long a delivery id is remembered: GitHub never redelivers on its own and other hosts
#: retry within minutes to hours; a replay after this is one more notice, a hint only (U2).
SEEN_FOR = timedelta(hours=6)
#: Most delivery ids remembered per GitProvider (U2): far more than a host retries at once.
MAX_GUARDS = 10_000
#: Longer ids (the host's choice) are hashed so a key stays short.
MAX_ID_CHARS = 128

#: KEYS[1]     the GitProvider's replay guards (Keys.deliveries): a sorted set id -> time
#: KEYS[2]     when a receiver last took a delivery for the repository (Keys.delivered, P14)
#: KEYS[3..]   one notice stream per notice (Keys.branch_notices), then the lease of each
#:             notice's branch, in the same order (its holder's doorbell is rung:
#:             ``shared.store.bells``)
#: ARGV[1]     the notices as one JSON array, in KEYS[3..] order, each a flat array of its
#:             field/value items (one argument instead of a dozen: cheaper to send and parse)
#: ARGV[2]     the delivery id, ARGV[3] now (seconds), ARGV[4..] each notice's branch key
#: The guards' age limit (seconds, also the set's TTL), the most ids kept and the streams'
#: approximate MAXLEN are constants of a writer, written into its script's text (fewer
#: arguments to pack and send per delivery).
#: Returns the number of notices appended, or -1 when the delivery was seen before.
_STORE_ONCE = """
local now = tonumber(ARGV[3])
redis.call('SET', KEYS[2], ARGV[3], 'EX', {ttl:d})
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - {ttl:d})
if redis.call('ZADD', KEYS[1], 'NX', now, ARGV[2]) == 0 then
  return -1
end
local over = redis.call('ZCARD', KEYS[1]) - {max_guards:d}
if over > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
redis.call('EXPIRE', KEYS[1], {ttl:d})
local notices = cjson.decode(ARGV[1])
local n = (#KEYS - 2) / 2
for i = 1, n do
  redis.call('XADD', KEYS[i + 2], 'MAXLEN', '~', {max_len:d}, '*', unpack(notices[i]))
  ring(KEYS[i + 2 + n], ARGV[i + 3])
end
return n
"""
#: The notices' JSON: compact, non-ASCII as is (one encoder: ``json.dumps`` with options
#: builds a new one on every call).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: Stream keys remembered per (URL, ref): building one normalises the URL and hashes it.
_STREAM_KEYS_KEPT = 1024


def _flat(notice: PushNotice) -> list[str]:
    return [item for pair in notice.to_fields().items() for item in pair]


class NoticeWriter:
    """Appends notices to branch streams, at most once per (GitProvider, delivery id)."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        max_len: int = MAX_NOTICES,
        *,
        max_guards: int = MAX_GUARDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._r = client
        self._max_guards = max_guards
        self._clock = clock
        self._keys = keys
        self._max_len = max_len
        self._ttl = int(SEEN_FOR.total_seconds())
        script = _STORE_ONCE.format(ttl=self._ttl, max_len=int(max_len), max_guards=int(max_guards))
        self._store_once = client.register_script(ring_lua(keys) + script)
        self._bells = Bells(client, keys)
        self._streams: dict[tuple[str, str], str] = {}
        self._direct = ThreadConnections(client)

    def _stream(self, notice: PushNotice) -> str:
        """The notice's stream key, from a small cache (a receiver serves few branches)."""
        known = self._streams.get((notice.url, notice.ref))
        if known is None:
            if len(self._streams) >= _STREAM_KEYS_KEPT:
                self._streams.clear()
            known = self._keys.branch_notices(notice.target.key)
            self._streams[(notice.url, notice.ref)] = known
        return known

    def delivered(self, url: str) -> None:
        """Record that a receiver took a verified delivery for the repository at ``url`` that
        stores no notice (a ping, an event that is not a push, a push to a branch nothing
        mirrors): P14, the repository's webhook is known to arrive. Storing notices records it
        in the same step.

        Raises ``StoreUnavailable`` when Redis does not answer."""
        with unavailable_as_error("recording a delivery"):
            self._r.set(self._keys.delivered(url), repr(self._clock()), ex=self._ttl)

    def guard_key(self, provider: str) -> str:
        """The replay guards of one GitProvider's receiver."""
        return self._keys.deliveries(provider)

    @staticmethod
    def guard_id(delivery: str) -> str:
        """How a delivery id is remembered: as sent, or hashed when long."""
        if len(delivery) > MAX_ID_CHARS:
            return hashlib.sha256(delivery.encode()).hexdigest()
        return delivery

    def store(self, provider: str, delivery: str, notices: Sequence[PushNotice]) -> bool:
        """Append ``notices``; False (and nothing stored) when ``delivery`` was seen before.

        Raises ``StoreUnavailable`` when Redis does not answer.
        """
        if not notices:
            return True
        with unavailable_as_error("storing notices"):
            if not delivery:
                return self._store_always(notices)
            streams = [self._stream(n) for n in notices]
            leases = [self._keys.branch_lease(n.target.key) for n in notices]
            items = _ENCODE([_flat(n) for n in notices])
            added = self._run_store_once(
                [self.guard_key(provider), self._keys.delivered(notices[0].url), *streams, *leases],
                [items, self.guard_id(delivery), self._clock(), *(n.target.key for n in notices)],
            )
        return int(added) >= 0

    def _run_store_once(self, keys: list[str], args: list[str | float]) -> int:
        """EVALSHA on this thread's own connection (``shared.store.direct``: redis-py's
        ``Script`` wrapper, and its pool around every command, cost more Python than the call
        itself); a server that does not know the script yet (a restart, a flushed cache) gets
        it loaded by the wrapper."""
        try:
            sha = self._store_once.sha
            return int(
                self._direct.execute_acknowledged(
                    min_replicas(self._r), "EVALSHA", sha, len(keys), *keys, *args
                )
            )
        except NoScriptError:
            with acknowledged(self._r) as r:
                return int(self._store_once(keys=keys, args=args, client=r))

    def _store_always(self, notices: Sequence[PushNotice]) -> bool:
        with acknowledged(self._r) as r:
            pipe = r.pipeline(transaction=True)
            pipe.set(self._keys.delivered(notices[0].url), repr(self._clock()), ex=self._ttl)
            for notice in notices:
                key = self._stream(notice)
                fields = notice.to_fields()
                pipe.xadd(key, fields, maxlen=self._max_len, approximate=True)  # type: ignore[arg-type]
                self._bells.ring(pipe, notice.target.key)
            pipe.execute()
        return True
