"""Who authors a write (P5): each object event joined to the audit fact of the edit.

The branch's owner follows the fact streams of the audit routes and types its GitTargets
write (``shared.store.attribution``), a bounded read after the last entry it saw, at most once
per type per pass, into a bounded in-memory index (per route and type: the newest
``MAX_PER_TYPE`` facts, none older than ``FACT_TTL_S``). The facts are indexed for the join
(``shared.decide.attribution.FactIndex``) only when they change: when a read brings new ones
or some age out, so a pass of many events pays for the index once per stream, not once per
event. ``Attributor.author`` answers for one event with the pure join
(``shared.decide.attribution.join``):

- ``None`` for a GitTarget without attribution (its commits are authored by the committer);
- the resolved ``Author`` (facts §3.6 names and emails) once a fact joins;
- ``WAIT`` while no fact joins and the grace (``Settings.attribution_grace``, on the injected
  clock) has not run out: the caller leaves the event for a later pass, never sleeping;
- the unresolved sentinel once the grace ran out: a missing fact never blocks the write.

An event's grace starts when the owner first sees it (``seen``: it came into the branch's
backlog), not when it reaches the head of the backlog (N5). The events of a branch are joined
in stream order and the first that waits holds back the rest; were each one's grace started
when its turn came, a backlog of N events without facts (an audit outage: the receiver down,
the API server's webhook misconfigured, a batch dropped) would wait N graces, one after
another. Counted from sight, every event of the backlog waits the same grace at once, so the
backlog reaches Git about one grace later than it would without attribution.

Each owner also keeps, per audit route, the verdict of its last join (``joined``: a fact came;
``absent``: none within the grace) and writes it to Redis when it changes
(``FactStreams.record_joins``): the watcher shows it on the ClusterProvider as
``AuditFactsReceived`` (False ``NoAuditFacts`` while edits find no fact).

A fact that arrives after its event was written changes nothing: a pushed commit is never
rewritten.

``Attributor.submitter`` answers the same way for a CommitRequest (P6): its submitter is the
user of the audit fact of its own create (``gitopsreverser.io/commitrequests``, by uid, see
``shared.decide.attribution.join_submitter``), waited for with the same grace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from services.branch_worker import metrics
from shared.decide.attribution import FactIndex, Joined, group_resource, join, join_submitter
from shared.kube.kinds import COMMIT_REQUESTS
from shared.model.attribution import UNRESOLVED, Author, AuthorFact, JoinVerdict, author_of
from shared.model.commit_requests import CommitRequestItem
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.store.attribution import FactStreams
from shared.store.streams import StreamEntry

log = logging.getLogger(__name__)

#: Facts kept per route and type, and their age (facts §1.4: 4096 per type, 10 minutes).
MAX_PER_TYPE = 4096
FACT_TTL_S = 600.0


class Wait:
    """The event's fact may still come: leave it for a later pass."""

    def __repr__(self) -> str:
        return "WAIT"


WAIT: Final = Wait()


@dataclass(slots=True)
class _Followed:
    """What one owner knows of one fact stream."""

    last_id: str = "0"
    #: (when this owner read it, the fact), in stream order.
    facts: list[tuple[float, AuthorFact]] = field(default_factory=list)
    #: ``facts`` indexed for the join; None when they changed since it was built.
    index: FactIndex | None = None
    #: The earliest read time in ``facts`` (kept exact: nothing ages out until it is older
    #: than the TTL, so a pass does not look at every fact for each event).
    oldest: float = 0.0


class Attributor:
    """Joins one branch's object events to facts; one per branch loop."""

    def __init__(self, facts: FactStreams, clock: Callable[[], float], grace_s: float) -> None:
        self._streams = facts
        self._clock = clock
        self.grace_s = grace_s
        self._followed: dict[tuple[str, str], _Followed] = {}
        self._fresh: set[tuple[str, str]] = set()
        #: Entry id -> when the grace of an event that waits for its fact started.
        self._first_look: dict[str, float] = {}
        #: Entry id -> when this owner first saw it (``seen``), for the entries of its backlog.
        self._sighted: dict[str, float] = {}
        #: Audit route -> this owner's last verdict on it (written to Redis when it changes).
        self._verdicts: dict[str, JoinVerdict] = {}

    def seen(self, backlog: Iterable[StreamEntry]) -> None:
        """``backlog`` is the branch's backlog now, in stream order: an entry not seen before
        is seen now (its grace starts now); one that left the backlog is forgotten."""
        now = self._clock()
        before = self._sighted
        self._sighted = {e.entry_id: before.get(e.entry_id, now) for e in backlog}

    def new_pass(self) -> None:
        """Streams are read again (once each) in the next pass."""
        self._fresh.clear()

    def author(
        self, target: TargetConfig, entry_id: str, event: ObjectEvent
    ) -> Author | Wait | None:
        """The author of the write ``event`` makes (see the module)."""
        if not target.audit_route:
            return None
        oid = event.object_id
        gr = group_resource(oid.group, oid.resource)
        now = self._clock()
        first = self._start(entry_id, now)
        known = self._facts(target.audit_route, gr, now)
        joined = join(
            event.operation,
            uid=event.uid,
            resource_version=event.resource_version,
            namespace=oid.namespace,
            name=oid.name,
            facts=known,
            grace_over=now - first >= self.grace_s,
        )
        return self._found(
            joined,
            (target.audit_route, entry_id),
            first,
            now,
            (event.operation, oid.group, oid.version, oid.resource),
        )

    def writer(self, target: TargetConfig, event: ObjectEvent) -> str | None:
        """W2: the user the audit fact of this very write names (its uid and resourceVersion,
        the ``exact`` tier), None when no such fact is known (attribution off, the fact not
        come, or only a fact of another write of the object). Read after ``author`` found
        the event's author, so a fact that was coming has been waited for."""
        if not target.audit_route or event.operation == "DELETE":
            return None
        oid = event.object_id
        now = self._clock()
        joined = join(
            event.operation,
            uid=event.uid,
            resource_version=event.resource_version,
            namespace=oid.namespace,
            name=oid.name,
            facts=self._facts(target.audit_route, group_resource(oid.group, oid.resource), now),
            grace_over=True,
        )
        if joined is None or joined.tier != "exact" or joined.fact is None:
            return None
        return joined.fact.author

    def submitter(
        self, target: TargetConfig, entry_id: str, request: CommitRequestItem
    ) -> Author | Wait | None:
        """P5, P6: who submitted ``request``, from the audit fact of its create; ``None`` when
        the GitTarget has no attribution, ``WAIT`` while the fact may still come, the
        unresolved sentinel once the grace ran out."""
        if not target.audit_route:
            return None
        res = COMMIT_REQUESTS
        now = self._clock()
        first = self._start(entry_id, now)
        joined = join_submitter(
            uid=request.uid,
            resource_version=request.resource_version,
            facts=self._facts(target.audit_route, group_resource(res.group, res.resource), now),
            grace_over=now - first >= self.grace_s,
        )
        return self._found(
            joined,
            (target.audit_route, entry_id),
            first,
            now,
            ("CREATE", res.group, res.version, res.resource),
        )

    def _start(self, entry_id: str, now: float) -> float:
        """When the entry's grace started: when it was first seen (``seen``), else now."""
        return self._first_look.setdefault(entry_id, self._sighted.get(entry_id, now))

    def _found(
        self,
        joined: Joined | None,
        where: tuple[str, str],
        first: float,
        now: float,
        labels: tuple[str, str, str, str],
    ) -> Author | Wait:
        if joined is None:
            return WAIT
        route, entry_id = where
        operation, group, version, resource = labels
        self._first_look.pop(entry_id, None)
        self._judged(route, "absent" if joined.fact is None else "joined")
        found = author_of(joined.fact) if joined.fact is not None else UNRESOLVED
        kind = "none" if joined.fact is None else _actor_kind(joined.fact.author)
        metrics.ATTRIBUTION_RESOLUTIONS.labels(joined.tier, kind, group, version, resource).inc()
        metrics.ATTRIBUTION_WAIT.labels(joined.tier, operation, group, version, resource).observe(
            now - first
        )
        return found

    def _judged(self, route: str, verdict: JoinVerdict) -> None:
        """Record a change of this owner's verdict on ``route`` (see the module)."""
        if self._verdicts.get(route) != verdict:
            self._streams.record_joins(route, verdict)
            self._verdicts[route] = verdict
            if verdict == "absent":
                log.warning(
                    "no audit fact arrived within the grace on route %s: edits are authored "
                    "by the unresolved sentinel until facts come again",
                    route,
                )

    def waiting_until(self) -> float | None:
        """When the grace of the longest-waiting event runs out (None: nothing waits)."""
        if not self._first_look:
            return None
        return min(self._first_look.values()) + self.grace_s

    def clear_waits(self) -> None:
        """A pass applied everything it had: nothing waits for a fact any more."""
        self._first_look.clear()

    def _facts(self, route: str, gr: str, now: float) -> FactIndex:
        key = (route, gr)
        followed = self._followed.setdefault(key, _Followed())
        if key not in self._fresh:
            new, followed.last_id, bad = self._streams.read_after(route, gr, followed.last_id)
            if bad:
                log.warning("skipped %d undecodable fact entries of %s %s", bad, route, gr)
                metrics.ATTRIBUTION_DECODE_ERRORS.labels("redis").inc(bad)
            if new:
                metrics.ATTRIBUTION_FACTS.labels("read").inc(len(new))
                followed.oldest = min(followed.oldest, now) if followed.facts else now
                followed.facts.extend((now, f) for f in new)
                followed.index = None
            self._fresh.add(key)
        horizon = now - FACT_TTL_S
        if followed.facts and followed.oldest < horizon:  # some fact may have aged out
            fresh = [(at, f) for at, f in followed.facts if at >= horizon]
            if len(fresh) < len(followed.facts):
                metrics.ATTRIBUTION_EVICTIONS.labels("ttl").inc(len(followed.facts) - len(fresh))
                followed.facts = fresh
                followed.index = None
        if len(followed.facts) > MAX_PER_TYPE:
            metrics.ATTRIBUTION_EVICTIONS.labels("capacity").inc(len(followed.facts) - MAX_PER_TYPE)
            followed.facts = followed.facts[-MAX_PER_TYPE:]
            followed.index = None
        if followed.index is None:
            followed.index = FactIndex.of(f for _, f in followed.facts)
            followed.oldest = min((at for at, _ in followed.facts), default=now)
        return followed.index


def _actor_kind(username: str) -> str:
    return "serviceaccount" if username.startswith("system:serviceaccount:") else "user"
