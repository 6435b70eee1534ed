"""Attribution in Redis: audit routes (watcher to receiver) and fact streams (receiver to
branch workers).

A route record names the Secret that holds the route's bearer token (its name and key in the
product's namespace), never the token. Facts of one audit request and one group/resource are
one stream entry (field ``facts``: a JSON array), appended to
``audit:facts:{route}:{group/resource}`` with ``MAXLEN ~`` and an ``EXPIRE`` refreshed on each
append, and trimmed with ``XTRIM MINID`` to the TTL horizon at most once a minute per stream
and process (facts: upstream-gitops-reverser.md §4), so the streams stay bounded in length and
age: a busy stream never expires, and without the trim it would keep facts up to ``MAXLEN``
however old. The horizon is the new entry's id (Redis's clock) less the TTL, so a process
clock that runs ahead never trims fresh facts.
A branch worker follows a stream with ``XRANGE`` after the last id it read.

How a route's edits last fared in the join (``RouteJoins``: ``joined`` or ``absent`` and since
when) is a hash per route that branch owners write when their verdict changes and the watcher
reads for the ClusterProvider's ``AuditFactsReceived`` (N5); it goes with the route.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from shared.model.attribution import (
    AuthorFact,
    JoinVerdict,
    RouteJoins,
    facts_from_json,
    facts_json,
)
from shared.store.errors import unavailable_as_error
from shared.store.keys import Keys

#: Facts kept per stream (``XADD MAXLEN ~``) and their age (facts §4: 10 000, 10 minutes).
FACTS_MAXLEN = 10_000
FACTS_TTL_S = 600
#: Entries read per ``XRANGE`` call by a follower.
READ_COUNT = 512
#: Seconds between two ``XTRIM MINID`` of one stream by one process (facts §4: once a minute).
TRIM_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class AuditRoute:
    """One ``/audit-webhook/<route>``: the ClusterProvider that set it and its token Secret."""

    route: str
    provider: str
    secret_name: str
    secret_key: str

    def to_json(self) -> str:
        """Stable JSON."""
        return json.dumps(
            [self.route, self.provider, self.secret_name, self.secret_key], separators=(",", ":")
        )

    @classmethod
    def from_json(cls, text: str) -> AuditRoute | None:
        """The inverse of ``to_json``; None for anything else."""
        try:
            route, provider, name, key = json.loads(text)
        except (ValueError, TypeError):
            return None
        return cls(str(route), str(provider), str(name), str(key))


class AuditRoutes:
    """Publish, look up and forget audit routes."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def publish(self, routes: Mapping[str, AuditRoute]) -> None:
        """Make the published routes exactly ``routes``."""
        with unavailable_as_error("publishing audit routes"):
            old = {str(r) for r in self._r.smembers(self._keys.audit_routes)}
            pipe = self._r.pipeline(transaction=True)
            for route in old - set(routes):
                pipe.delete(self._keys.audit_route(route), self._keys.audit_joins(route))
                pipe.srem(self._keys.audit_routes, route)
            for name, record in routes.items():
                pipe.set(self._keys.audit_route(name), record.to_json())
                pipe.sadd(self._keys.audit_routes, name)
            pipe.execute()

    def lookup(self, route: str) -> AuditRoute | None:
        """The route's record, or None."""
        with unavailable_as_error("reading an audit route"):
            text = self._r.get(self._keys.audit_route(route))
        return AuditRoute.from_json(str(text)) if text else None

    def joins(self, route: str) -> RouteJoins | None:
        """How the route's edits last fared in the join; None before any was judged."""
        with unavailable_as_error("reading an audit route's joins"):
            found = self._r.hgetall(self._keys.audit_joins(route))
        verdict = str((found or {}).get("verdict", ""))
        if verdict == "joined":
            return RouteJoins("joined", str(found.get("since", "")))
        if verdict == "absent":
            return RouteJoins("absent", str(found.get("since", "")))
        return None


class FactStreams:
    """Append facts (receiver) and read them after an id (branch workers)."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        ttl_s: int = FACTS_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._r = client
        self._keys = keys
        self._ttl = ttl_s
        self._clock = clock
        self._wall = wall  # the ``since`` of a route's joins: read by other processes
        #: Stream key -> when this process last trimmed it.
        self._trimmed_at: dict[str, float] = {}

    def append(self, route: str, by_type: Mapping[str, list[AuthorFact]]) -> int:
        """One entry per group/resource (facts §1.4); returns how many facts were stored."""
        if not by_type:
            return 0
        with unavailable_as_error("storing attribution facts"):
            pipe = self._r.pipeline(transaction=False)
            streams = [self._keys.audit_facts(route, gr) for gr in by_type]
            for key, facts in zip(streams, by_type.values(), strict=True):
                pipe.xadd(key, {"facts": facts_json(facts)}, maxlen=FACTS_MAXLEN, approximate=True)
                pipe.expire(key, self._ttl)
            added = pipe.execute()[::2]
            self._trim(dict(zip(streams, (str(i) for i in added), strict=True)))
        return sum(len(f) for f in by_type.values())

    def _trim(self, newest: Mapping[str, str]) -> None:
        """``XTRIM MINID`` to the TTL horizon, each stream at most every ``TRIM_EVERY_S``."""
        now = self._clock()
        due = {
            key: entry_id
            for key, entry_id in newest.items()
            if key not in self._trimmed_at or now - self._trimmed_at[key] >= TRIM_EVERY_S
        }
        if not due:
            return
        pipe = self._r.pipeline(transaction=False)
        for key, entry_id in due.items():
            horizon = int(entry_id.split("-", 1)[0]) - self._ttl * 1000
            pipe.xtrim(key, minid=str(max(horizon, 0)), approximate=False)
            self._trimmed_at[key] = now
        pipe.execute()

    def read_after(
        self, route: str, group_resource: str, after: str
    ) -> tuple[list[AuthorFact], str, int]:
        """Facts appended after entry ``after`` ("0" for all), the last id read, and how many
        entries could not be decoded (skipped)."""
        key = self._keys.audit_facts(route, group_resource)
        facts: list[AuthorFact] = []
        bad = 0
        with unavailable_as_error("reading attribution facts"):
            while True:
                entries = self._r.xrange(key, min=f"({after}", count=READ_COUNT) or []
                for entry_id, fields in entries:
                    after = str(entry_id)
                    try:
                        facts.extend(facts_from_json(str((fields or {}).get("facts", ""))))
                    except ValueError:
                        bad += 1
                if len(entries) < READ_COUNT:
                    return facts, after, bad

    def record_joins(self, route: str, verdict: JoinVerdict) -> None:
        """A branch owner's verdict on ``route`` changed to ``verdict``, now (``RouteJoins``)."""
        since = datetime.fromtimestamp(self._wall(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with unavailable_as_error("recording an audit route's joins"):
            self._r.hset(
                self._keys.audit_joins(route), mapping={"verdict": verdict, "since": since}
            )
