"""The audit webhook backend of the API server double, in kube-apiserver's batch mode.

kube-apiserver, started with ``--audit-webhook-config-file`` (a kubeconfig naming the URL and,
here, a bearer token) and an audit policy, POSTs ``audit.k8s.io/v1`` ``EventList`` objects to
that URL. In the default ``batch`` mode it buffers events and sends a batch when
``--audit-webhook-batch-max-size`` events are waiting or ``--audit-webhook-batch-max-wait``
has passed since the batch's first event (the facts' e2e flags: 10 and 1 s,
upstream-gitops-reverser.md §9.15). A delivery that fails is retried a few times with a
backoff and then dropped: the API request it records was answered long ago and is never
blocked by it (the batching backend sends asynchronously).

The double's policy is the facts' e2e policy reduced to what it records (§9.15): create,
update, patch, delete and deletecollection of resources are audited at ``RequestResponse``
with ``omitManagedFields``; ``*/status`` writes and every read are level ``None``. Each audited
request yields two events, stage ``RequestReceived`` then ``ResponseComplete`` (no
``omitStages``: the facts do not say the e2e policy omits one), with ``auditID``, ``verb``,
``requestURI``, ``user`` (the bearer token's user, its ``system:authenticated`` group and the
``extra`` configured for that user), ``objectRef`` (resource, namespace, name, apiGroup,
apiVersion, subresource; uid and resourceVersion from the response object), and on
ResponseComplete ``responseStatus.code`` and ``responseObject`` (managedFields omitted).
``requestObject`` is not recorded (the product never reads it). Field shapes follow the
``audit.k8s.io/v1`` reference (kubernetes.io, "kube-apiserver Audit Configuration (v1)"),
which /work/shared/facts does not restate.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

LOG = logging.getLogger(__name__)

#: The verbs the policy audits (facts §9.15: RequestResponse for these).
AUDITED_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
#: Subresources the policy leaves out (facts §9.15: ``*/status`` at level None).
UNAUDITED_SUBRESOURCES = frozenset({"status"})
#: kube-apiserver's ``--audit-webhook-batch-buffer-size`` default: events beyond it are dropped.
BUFFER_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class AuditWebhook:
    """Where and how the backend sends: the webhook kubeconfig's server and token, and the
    batch flags (defaults: the facts' e2e ``batch-max-size=10``, ``batch-max-wait=1s``)."""

    url: str
    token: str = ""
    batch_max_size: int = 10
    batch_max_wait: float = 1.0
    #: Attempts per batch before it is dropped, and the wait after the first failure
    #: (doubled after each; ``--audit-webhook-initial-backoff`` is 10 s in kube-apiserver,
    #: shorter here so a test of a dropped batch ends soon).
    attempts: int = 3
    initial_backoff: float = 0.2
    timeout: float = 5.0
    #: ``user.extra`` of each user name (what an OIDC authenticator would add).
    user_extra: Mapping[str, Mapping[str, list[str]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Audited:
    """What the server knows of one finished resource request."""

    user: str
    verb: str
    request_uri: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    response: Any
    received: datetime
    completed: datetime


def _micro(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _without_managed_fields(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    out = copy.deepcopy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    for item in out.get("items") or []:
        if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
            item["metadata"].pop("managedFields", None)
    return out


def events_for(request: Audited, extra: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """The two audit events of one audited request (RequestReceived, ResponseComplete)."""
    audit_id = str(uuid.uuid4())
    ref: dict[str, Any] = {
        "resource": request.resource,
        "apiGroup": request.group,
        "apiVersion": request.version,
    }
    if request.namespace:
        ref["namespace"] = request.namespace
    if request.subresource:
        ref["subresource"] = request.subresource
    response = request.response if isinstance(request.response, dict) else {}
    meta = response.get("metadata") if response.get("kind") != "Status" else None
    name = (
        request.name or (meta or {}).get("name", "") if request.verb != "deletecollection" else ""
    )
    if name:
        ref["name"] = name
    user: dict[str, Any] = {"username": request.user, "groups": ["system:authenticated"]}
    if extra:
        user["extra"] = {k: list(v) for k, v in extra.items()}
    base = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "RequestResponse",
        "auditID": audit_id,
        "requestURI": request.request_uri,
        "verb": request.verb,
        "user": user,
        "sourceIPs": ["127.0.0.1"],
        "requestReceivedTimestamp": _micro(request.received),
    }
    received = {
        **base,
        "stage": "RequestReceived",
        "objectRef": dict(ref),
        "stageTimestamp": _micro(request.received),
    }
    if isinstance(meta, dict) and 200 <= request.code < 300 and request.verb != "deletecollection":
        if meta.get("uid"):
            ref["uid"] = meta["uid"]
        if meta.get("resourceVersion"):
            ref["resourceVersion"] = meta["resourceVersion"]
    complete: dict[str, Any] = {
        **base,
        "stage": "ResponseComplete",
        "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": request.code},
        "stageTimestamp": _micro(request.completed),
    }
    if request.response is not None:
        complete["responseObject"] = _without_managed_fields(request.response)
    return [received, complete]


def audited(verb: str, subresource: str) -> bool:
    """Whether the policy records a request (level not None)."""
    return verb in AUDITED_VERBS and subresource not in UNAUDITED_SUBRESOURCES


class AuditBackend:
    """Buffers events and sends them in batches from one thread; never blocks a request."""

    def __init__(
        self, webhook: AuditWebhook, post: Callable[[AuditWebhook, bytes], int] | None = None
    ) -> None:
        self.webhook = webhook
        self._post = post or _http_post
        self._cond = threading.Condition()
        self._buffer: list[dict[str, Any]] = []
        self._first_at: float | None = None
        self._stopped = False
        #: Batches sent (answered 2xx), and batches and events dropped after failed attempts.
        self.sent = 0
        self.dropped_batches = 0
        self.dropped_events = 0
        self._thread = threading.Thread(target=self._run, name="audit-webhook", daemon=True)
        self._thread.start()

    def record(self, request: Audited) -> None:
        """Queue the events of one request (dropped when the buffer is full, as the real one)."""
        events = events_for(request, self.webhook.user_extra.get(request.user, {}))
        with self._cond:
            if len(self._buffer) + len(events) > BUFFER_SIZE:
                self.dropped_events += len(events)
                return
            if not self._buffer:
                self._first_at = _monotonic()
            self._buffer.extend(events)
            self._cond.notify_all()

    def stop(self) -> None:
        """Send what is buffered (one attempt each) and stop the thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _take(self) -> list[dict[str, Any]] | None:
        """The next batch: when max-size events wait or max-wait passed since the first."""
        with self._cond:
            while True:
                if self._buffer and (
                    self._stopped or len(self._buffer) >= self.webhook.batch_max_size
                ):
                    break
                if self._stopped:
                    return None
                if self._buffer and self._first_at is not None:
                    left = self._first_at + self.webhook.batch_max_wait - _monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                else:
                    self._cond.wait()
            batch = self._buffer[: self.webhook.batch_max_size]
            self._buffer = self._buffer[self.webhook.batch_max_size :]
            self._first_at = _monotonic() if self._buffer else None
            return batch

    def _run(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            self._send(batch)

    def _send(self, batch: list[dict[str, Any]]) -> None:
        body = json.dumps(
            {"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": batch}
        ).encode()
        backoff = self.webhook.initial_backoff
        for attempt in range(self.webhook.attempts):
            try:
                code = self._post(self.webhook, body)
            except OSError as err:
                code = 0
                LOG.debug("audit webhook delivery failed: %s", err)
            if 200 <= code < 300:
                self.sent += 1
                return
            if attempt + 1 < self.webhook.attempts and not self._stopped:
                with self._cond:
                    self._cond.wait(backoff)
                backoff *= 2
        self.dropped_batches += 1
        self.dropped_events += len(batch)
        LOG.warning("audit webhook: dropped a batch of %d events", len(batch))


def _monotonic() -> float:
    return time.monotonic()


def _http_post(webhook: AuditWebhook, body: bytes) -> int:
    headers = {"Content-Type": "application/json"}
    if webhook.token:
        headers["Authorization"] = f"Bearer {webhook.token}"
    request = urllib.request.Request(webhook.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=webhook.timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
