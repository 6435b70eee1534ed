"""The ledger behind ``GitTarget.status.applier`` (S3), one entry per GitTarget incarnation.

Keyed by uid, so a GitTarget deleted and recreated under the same name never inherits its
predecessor's request; ``ConfigStore.forget_target`` deletes the entry with the rest of the
incarnation's keys. The dispatcher writes each attempt's request and outcome; the watcher
publishes the entry into the GitTarget's status when it changes (O6). Entries go in and come
out as ``LastRequest`` records, so no caller handles their JSON.

Beside the entry, a list keeps ``recent``: the last ``RECENT`` requests, newest first
(``Keys.ledger_recent``: pushed at the head and trimmed, so a report costs the same however
many it keeps; it was a JSON list in the entry, decoded and written whole on every report),
for the apply window (W1). An applier's write can reach the branch
worker seconds late (the watcher or Redis was down); it is judged by the request in force when
it was made, which a newer request may have replaced as ``lastRequest`` meanwhile.
``record_lua`` is the one piece of Lua that writes an entry (``Attempts.report_once`` runs it
too), so the two fields never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from shared.model.ids import GitTargetUid
from shared.model.ledger import LastRequest
from shared.store.keys import Keys

#: How many finished requests each entry keeps in ``recent``: at least the requests of the
#: minute a Redis outage may last (C9), at an attempt every few seconds.
RECENT = 32


#: Keys ``record_lua`` writes per uid (``ledger_keys``): the entry, its list, its counts, the
#: set of changed entries and the set of changed health keys (the same two for every uid).
KEYS_PER_UID = 5
#: Most changed entries taken in one read: more GitTargets than an install has.
CHANGES_TAKEN = 1_000_000


def record_lua(index: str, entry: int) -> str:
    """Lua that writes one ledger entry: ``KEYS[index]`` the entry, ``KEYS[index + 1]`` its
    ``recent`` list, ``KEYS[index + 2]`` its counts by outcome, ``KEYS[index + 3]`` the set of
    changed entries, ``KEYS[index + 4]`` the set of changed health keys, ``ARGV[entry]`` the
    LastRequest JSON; sets ``lastRequest``, bumps ``version`` (and names the entry in the set,
    for the watcher's light pass), pushes onto ``recent``, capped at ``RECENT``, and counts the
    request's outcome (the GitTarget's ``apply_requests`` series, ``shared.store.target_health``;
    the counts are named in the health set, for the watcher's reconcile pass). A ``recent``
    field an older version kept in the entry is dropped."""
    key, recent, text = f"KEYS[{index}]", f"KEYS[{index} + 1]", f"ARGV[{entry}]"
    counts, changed = f"KEYS[{index} + 2]", f"KEYS[{index} + 3]"
    health = f"KEYS[{index} + 4]"
    return f"""
redis.call('HSET', {key}, 'lastRequest', {text})
redis.call('HINCRBY', {key}, 'version', 1)
redis.call('SADD', {changed}, {key})
redis.call('HDEL', {key}, 'recent')
redis.call('LPUSH', {recent}, {text})
redis.call('LTRIM', {recent}, 0, {RECENT - 1})
local finished = cjson.decode({text})
if type(finished['outcome']) == 'string' then
  redis.call('HINCRBY', {counts}, finished['outcome'], 1)
  redis.call('SADD', {health}, {counts})
end
"""


_RECORD = f"for i = 1, #KEYS, {KEYS_PER_UID} do\n" + record_lua("i", 1) + "end\nreturn 1\n"
# Only the recent list (and the version its readers poll), not the counts by outcome, which
# count reports: ``Ledger.remember``.
_REMEMBER = f"""
for i = 1, #KEYS, {KEYS_PER_UID} do
  redis.call('HINCRBY', KEYS[i], 'version', 1)
  redis.call('SADD', KEYS[i + 3], KEYS[i])
  redis.call('LPUSH', KEYS[i + 1], ARGV[1])
  redis.call('LTRIM', KEYS[i + 1], 0, {RECENT - 1})
end
return 1
"""


def ledger_keys(keys: Keys, uids: Iterable[str]) -> list[str]:
    """The keys ``record_lua`` writes for each uid, in its order: entry, list, counts, the
    set of changed entries, the set of changed health keys."""
    return [
        k
        for uid in uids
        for k in (
            keys.ledger(GitTargetUid(uid)),
            keys.ledger_recent(GitTargetUid(uid)),
            keys.ledger_counts(GitTargetUid(uid)),
            keys.ledger_changed,
            keys.health_changed,
        )
    ]


class Ledger:
    """Read and write ``status.applier.lastRequest`` per GitTarget uid."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._record = client.register_script(_RECORD)
        self._remember = client.register_script(_REMEMBER)

    def record(self, uids: Iterable[str], last_request: LastRequest) -> None:
        """Set the last request of every GitTarget it served (changes ``version``), and add it
        to their ``recent`` requests."""
        keys = ledger_keys(self._keys, uids)
        if keys:
            self._record(keys=keys, args=[last_request.to_json()])

    def remember(self, uids: Iterable[str], request: LastRequest) -> None:
        """Add ``request`` to the recent requests of every GitTarget it served (changes
        ``version``) without making it their ``lastRequest``: a request the owner handed back
        at its deadline (A4), whose apply may still come, so the apply window still knows when
        it was sent (W1). Its own report, if one comes, is recorded as any other."""
        keys = ledger_keys(self._keys, uids)
        if keys:
            self._remember(keys=keys, args=[request.to_json()])

    def recent(self, uid: GitTargetUid) -> list[LastRequest]:
        """The GitTarget incarnation's last ``RECENT`` requests, newest first (entries that do
        not decode are left out)."""
        raw: list[str] = self._r.lrange(self._keys.ledger_recent(uid), 0, RECENT - 1)  # type: ignore[assignment]
        if not raw:  # an entry an older version wrote keeps them as JSON in the entry
            raw = self._older_recent(uid)
        found: list[LastRequest] = []
        for item in raw:
            try:
                found.append(LastRequest.from_json(str(item)))
            except ValueError:
                continue
        return found

    def _older_recent(self, uid: GitTargetUid) -> list[str]:
        text = self._r.hget(self._keys.ledger(uid), "recent")
        try:
            raw = json.loads(str(text)) if text else []
        except json.JSONDecodeError:
            return []
        return [str(item) for item in raw] if isinstance(raw, list) else []

    def last_request(self, uid: GitTargetUid) -> tuple[LastRequest | None, int]:
        """The last request recorded for a GitTarget incarnation, and the entry's version:
        the two fields alone (the status publish's read, whatever else the entry holds).

        ValueError when the stored entry is not one ``LastRequest.to_json`` wrote.
        """
        text, version = self._r.hmget(self._keys.ledger(uid), ["lastRequest", "version"])
        entry = LastRequest.from_json(str(text)) if text else None
        return entry, int(version or 0)

    def changes(self) -> set[GitTargetUid]:
        """The GitTarget uids whose entry changed since the last call, taken from the set in
        one command (SPOP: each change is handed to one reader; the watcher is it)."""
        taken: Any = self._r.spop(self._keys.ledger_changed, CHANGES_TAKEN)
        head, tail = self._keys.ledger(GitTargetUid("\0")).split("\0")
        return {
            GitTargetUid(str(key)[len(head) : len(str(key)) - len(tail)])
            for key in taken or ()
            if str(key).startswith(head) and str(key).endswith(tail)
        }

    def versions(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, int]:
        """Each entry's version in one round trip (0 when there is none): the cheap poll of O6."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.ledger(uid), "version")
        answers = pipe.execute()
        return {uid: int(v or 0) for uid, v in zip(uids, answers, strict=True)}
