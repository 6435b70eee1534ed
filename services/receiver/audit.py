"""``POST /audit-webhook/<route>`` (P5): the API server's audit webhook backend, as facts.

kube-apiserver POSTs an ``audit.k8s.io/v1`` ``EventList`` per batch (docs/attribution.md shows
its flags and webhook kubeconfig). The route is a ClusterProvider's
``spec.attribution.auditRoute``; its bearer token is the value of the Secret
``spec.attribution.tokenSecretRef`` names, in the product's namespace. Each event goes through
the accept gate (``shared.decide.attribution.accept``); the facts of the request are appended
to Redis once per group/resource (``shared.store.attribution``).

==========================================  =====  ==============
what                                        code   ``status``
==========================================  =====  ==============
no route published under that name          404    not_found
no, or a wrong, bearer token                401    unauthorized
body over ``Settings.max_body_bytes``       413    too_large
body unreadable                             400    malformed
not JSON, or not an EventList               400    malformed
facts stored (or none to store)             200    stored
Redis or the Secret unreadable, no token    503    unavailable
==========================================  =====  ==============

kube-apiserver retries a batch that is not answered 2xx and then drops it, so a malformed
batch is answered 400 and never 500. Nothing here logs the token or the body.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from services.receiver.body import BodyError
from services.receiver.intake import Answer
from services.receiver.secrets import SecretSource, SecretUnavailable
from shared.decide.attribution import Accepted, Dropped, accept, partition
from shared.model.attribution import AuthorFact
from shared.store.attribution import AuditRoutes, FactStreams
from shared.store.connection import Client
from shared.store.errors import StoreUnavailable
from shared.store.keys import Keys

LOG = logging.getLogger(__name__)
#: A route is a DNS subdomain (the CRD's pattern); anything else is not looked up.
ROUTE = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
#: The verbs of Kubernetes API requests (a dropped event's ``verb`` label; others are OTHER).
KNOWN_VERBS = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy"}
)
OTHER = "other"


class AuditMetrics:
    """The facts' ``audit_*`` counters (upstream-gitops-reverser.md §5.1), with label values
    from a bounded set (N9): an audit event is written by whoever makes an API request, so a
    label taken from it as sent would let any user add series to ``/metrics`` without end
    (one per made-up resource they POST to). A dropped event is counted by its outcome and,
    for the verbs Kubernetes has, its verb (``other`` for the rest); group, version and
    resource are left empty. An accepted event is answered 2xx, so it names a type the API
    server serves: its group, version and resource are labels, for the first
    ``MAX_TYPE_LABELS`` types this process meets; beyond them ``other`` (an API server serves
    a few hundred types; more means the route's token writes what it likes)."""

    #: Most (group, version, resource) label sets of accepted events, per process.
    MAX_TYPE_LABELS = 512

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.eventlists = Counter(
            "gitops_reverser_audit_eventlists_total",
            "Audit EventLists received, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.eventlist_events = Counter(
            "gitops_reverser_audit_eventlist_events_total",
            "Events in the audit EventLists received, by the EventList's outcome.",
            ["outcome"],
            registry=registry,
        )
        self.duration = Histogram(
            "gitops_reverser_audit_eventlist_duration_seconds",
            "Time to read an audit EventList and store its facts, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.events = Counter(
            "gitops_reverser_audit_events_total",
            "Audit events, by the accept gate's outcome (type labels for stored events only).",
            ["outcome", "category", "group", "version", "resource", "verb"],
            registry=registry,
        )
        self._types: set[tuple[str, str, str]] = set()

    def stored(self, decision: Accepted) -> None:
        """One event kept as a fact."""
        f = decision.fact
        labels = (f.group, decision.version, f.resource)
        if labels not in self._types:
            if len(self._types) >= self.MAX_TYPE_LABELS:
                labels = (OTHER, OTHER, OTHER)
            else:
                self._types.add(labels)
        self.events.labels("queued", "stored", *labels, f.verb).inc()

    def dropped(self, decision: Dropped) -> None:
        """One event left out: its outcome and verb only (see the class)."""
        verb = decision.verb if decision.verb in KNOWN_VERBS else OTHER
        self.events.labels(decision.outcome, "dropped", "", "", "", verb).inc()


@dataclass(frozen=True, slots=True)
class AuditStores:
    """Routes in, facts out."""

    routes: AuditRoutes
    facts: FactStreams

    @classmethod
    def over(cls, client: Client, keys: Keys) -> AuditStores:
        """Over ``client`` (``receiver_client``: its pool is shared with the hook's stores)."""
        return cls(AuditRoutes(client, keys), FactStreams(client, keys))


class AuditIntake:
    """Answers audit webhook requests; keeps no request state."""

    def __init__(
        self,
        stores: AuditStores,
        secrets: SecretSource,
        namespace: str,
        metrics: AuditMetrics,
    ) -> None:
        self._stores = stores
        self._secrets = secrets
        self._namespace = namespace
        self._metrics = metrics

    def receive(
        self, route: str, headers: Mapping[str, str], read_body: Callable[[], bytes]
    ) -> Answer:
        """The answer to ``POST /audit-webhook/<route>``, with its facts stored."""
        try:
            if not ROUTE.fullmatch(route):
                return Answer(404, "not_found", "no audit route at this path")
            record = self._stores.routes.lookup(route)
            if record is None:
                return Answer(404, "not_found", "no audit route at this path")
            token = self._secrets(self._namespace, record.secret_name, record.secret_key)
            if token is None or not token.strip():
                # Our configuration, not the caller's: answered as unreadable, so the API
                # server retries; the watcher shows it on the ClusterProvider
                # (AttributionConfigured=False TokenSecretNotFound / TokenSecretInvalid).
                LOG.warning(
                    "audit route's Secret %s/%s has no %r (or it is empty): answered 503",
                    self._namespace,
                    record.secret_name,
                    record.secret_key,
                    extra={"route": route},
                )
                return Answer(503, "unavailable", "the route's token Secret holds no token")
            if not _authorised(headers.get("authorization", ""), token):
                return Answer(401, "unauthorized", "a valid bearer token is required")
            try:
                body = read_body()
            except BodyError as err:
                self._metrics.eventlists.labels("decode_error").inc()
                return Answer(err.code, err.status, str(err))
            items = _items(body)
            if items is None:
                self._metrics.eventlists.labels("decode_error").inc()
                return Answer(400, "malformed", "the body is not an audit.k8s.io/v1 EventList")
            return self._store(route, items)
        except (StoreUnavailable, SecretUnavailable) as err:
            LOG.warning("audit webhook unavailable: %s", err, extra={"route": route})
            return Answer(503, "unavailable", "the fact store or the route's Secret is unreachable")

    def _store(self, route: str, items: list[Any]) -> Answer:
        started = time.perf_counter()
        facts: list[AuthorFact] = []
        for item in items:
            decision = accept(item)
            if isinstance(decision, Accepted):
                facts.append(decision.fact)
                self._metrics.stored(decision)
            else:
                self._metrics.dropped(decision)
        try:
            stored = self._stores.facts.append(route, partition(facts))
        except StoreUnavailable:
            self._metrics.eventlists.labels("process_error").inc()
            raise
        outcome = "processed" if items else "empty"
        self._metrics.duration.labels(outcome).observe(time.perf_counter() - started)
        self._metrics.eventlists.labels(outcome).inc()
        self._metrics.eventlist_events.labels(outcome).inc(len(items))
        return Answer(200, "stored", f"{stored} of {len(items)} events kept as facts")


def _authorised(header: str, token: bytes | None) -> bool:
    if not token or not header.lower().startswith("bearer "):
        return False
    given = header[len("bearer ") :].strip().encode()
    return hmac.compare_digest(given, token.strip())


def _items(body: bytes) -> list[Any] | None:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict) or document.get("kind") != "EventList":
        return None
    items = document.get("items")
    if items is None:
        return []
    return items if isinstance(items, list) else None
