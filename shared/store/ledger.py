"""The ledger behind ``GitTarget.status.applier`` (S3), one entry per GitTarget incarnation.

Keyed by uid, so a GitTarget deleted and recreated under the same name never inherits its
predecessor's request; ``ConfigStore.forget_target`` deletes the entry with the rest of the
incarnation's keys. The dispatcher writes each attempt's request and outcome; the watcher
publishes the entry into the GitTarget's status when it changes (O6). Entries go in and come
out as ``LastRequest`` records, so no caller handles their JSON.

Besides ``lastRequest`` the entry keeps ``recent``: the last ``RECENT`` requests, newest first
(a JSON list of entries), for the apply window (W1). An applier's write can reach the branch
worker seconds late (the watcher or Redis was down); it is judged by the request in force when
it was made, which a newer request may have replaced as ``lastRequest`` meanwhile.
``record_lua`` is the one piece of Lua that writes an entry (``Attempts.report_once`` runs it
too), so the two fields never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import redis

from shared.model.ids import GitTargetUid
from shared.model.ledger import LastRequest
from shared.store.keys import Keys

#: How many finished requests each entry keeps in ``recent``: at least the requests of the
#: minute a Redis outage may last (C9), at an attempt every few seconds.
RECENT = 32


def record_lua(index: str, entry: int) -> str:
    """Lua that writes one ledger entry: ``KEYS[index]`` the entry, ``ARGV[entry]`` the
    LastRequest JSON; sets ``lastRequest``, bumps ``version`` and keeps ``recent``."""
    key, text = f"KEYS[{index}]", f"ARGV[{entry}]"
    return f"""
redis.call('HSET', {key}, 'lastRequest', {text})
redis.call('HINCRBY', {key}, 'version', 1)
local recent = redis.call('HGET', {key}, 'recent')
local list = {{}}
if recent then list = cjson.decode(recent) end
table.insert(list, 1, {text})
while #list > {RECENT} do table.remove(list) end
redis.call('HSET', {key}, 'recent', cjson.encode(list))
"""


_RECORD = "for i = 1, #KEYS do\n" + record_lua("i", 1) + "end\nreturn 1\n"


class Ledger:
    """Read and write ``status.applier.lastRequest`` per GitTarget uid."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._record = client.register_script(_RECORD)

    def record(self, uids: Iterable[str], last_request: LastRequest) -> None:
        """Set the last request of every GitTarget it served (changes ``version``), and add it
        to their ``recent`` requests."""
        keys = [self._keys.ledger(GitTargetUid(uid)) for uid in uids]
        if keys:
            self._record(keys=keys, args=[last_request.to_json()])

    def recent(self, uid: GitTargetUid) -> list[LastRequest]:
        """The GitTarget incarnation's last ``RECENT`` requests, newest first (entries that do
        not decode are left out)."""
        text = self._r.hget(self._keys.ledger(uid), "recent")
        if not text:
            return []
        try:
            raw = json.loads(str(text))
        except json.JSONDecodeError:
            return []
        found: list[LastRequest] = []
        for item in raw if isinstance(raw, list) else []:
            try:
                found.append(LastRequest.from_json(str(item)))
            except ValueError:
                continue
        return found

    def last_request(self, uid: GitTargetUid) -> tuple[LastRequest | None, int]:
        """The last request recorded for a GitTarget incarnation, and the entry's version.

        ValueError when the stored entry is not one ``LastRequest.to_json`` wrote.
        """
        raw: dict[str, str] = self._r.hgetall(self._keys.ledger(uid))  # type: ignore[assignment]
        text = raw.get("lastRequest")
        entry = LastRequest.from_json(text) if text else None
        return entry, int(raw.get("version") or 0)

    def versions(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, int]:
        """Each entry's version in one round trip (0 when there is none): the cheap poll of O6."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.ledger(uid), "version")
        answers = pipe.execute()
        return {uid: int(v or 0) for uid, v in zip(uids, answers, strict=True)}
