"""Writing what we observed back to the objects: status conditions and Kubernetes Events.

Status goes through the ``/status`` subresource as a JSON merge patch that replaces
``status.conditions`` and ``status.observedGeneration`` and leaves every other status field
(``status.applier``, ``status.receiver``) to its own writer, which sets it whole with
``write_field``. The patch carries the
resourceVersion the conditions were computed from, so a write that raced with another
writer fails with Conflict instead of dropping that writer's condition; the next reconcile
decides again. Events follow client-go's recorder: a ``core/v1`` Event named
``<object>.<hex nanoseconds>`` in the object's namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from shared.kube.api import KubeClient, Obj
from shared.kube.kinds import EVENTS
from shared.model.crds import Condition, Meta
from shared.model.resources import ApiResource
from shared.model.times import rfc3339

EventType = Literal["Normal", "Warning"]
JSON_PATCH = "application/json-patch+json"
#: Kubernetes caps an Event message at 1 KiB in practice (kubectl truncates longer ones).
MAX_EVENT_MESSAGE = 1024


class StatusWriter:
    """Conditions and Events for objects of one cluster."""

    def __init__(self, client: KubeClient, component: str, clock: Callable[[], float]) -> None:
        self._client = client
        self._component = component
        self._clock = clock

    def write_conditions(
        self,
        res: ApiResource,
        meta: Meta,
        conditions: Sequence[Condition],
        extra: Mapping[str, str] | None = None,
    ) -> None:
        """Store ``conditions`` and ``observedGeneration`` (Conflict if the object moved),
        with the string ``extra`` status fields in the same write (a CommitRequest's
        ``branch`` and ``sha`` appear with the condition that reports them)."""
        patch = {
            "metadata": {"resourceVersion": meta.resource_version},
            "status": {
                **(extra or {}),
                "observedGeneration": meta.generation,
                "conditions": [c.to_raw() for c in conditions],
            },
        }
        self._client.patch_status(res, meta.namespace, meta.name, patch)

    def write_field(
        self, res: ApiResource, meta: Meta, field: str, value: Obj | str | None
    ) -> None:
        """Set (or, for None, remove) ``status.<field>`` of the incarnation ``meta`` names.

        A JSON patch whose first operation tests ``metadata.uid``: a GitTarget deleted and
        recreated under the same name rejects the write (422) instead of receiving what
        belonged to its predecessor (S3). The field is replaced whole, so nothing of an
        earlier value lingers. ``status`` must exist (the conditions are written first).
        """
        ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": meta.uid}]
        pointer = f"/status/{field}"
        if value is None:
            ops += [{"op": "add", "path": pointer, "value": {}}, {"op": "remove", "path": pointer}]
        else:
            ops.append({"op": "add", "path": pointer, "value": value})
        path = self._client.path(res, meta.namespace, meta.name) + "/status"
        self._client.request("patch", path, body=ops, content_type=JSON_PATCH)

    def record_event(
        self, res: ApiResource, meta: Meta, kind: EventType, reason: str, message: str
    ) -> None:
        """Record a Kubernetes Event about one object."""
        now = self._clock()
        stamp = rfc3339(now)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.name}.{int(now * 1e9):x}", "namespace": meta.namespace},
            "involvedObject": {
                "apiVersion": res.api_version,
                "kind": res.kind,
                "name": meta.name,
                "namespace": meta.namespace,
                "uid": meta.uid,
                "resourceVersion": meta.resource_version,
            },
            "reason": reason,
            "message": message[:MAX_EVENT_MESSAGE],
            "type": kind,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self._client.create(EVENTS, meta.namespace or "default", event)
