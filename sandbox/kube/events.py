"""One set of Events seen through two APIs: core ``v1`` and ``events.k8s.io/v1``.

The real server stores Events once and serves them in both groups, converting field names
(k8s.io/kubernetes pkg/apis/events/v1/conversion.go: ``involvedObject`` is ``regarding``,
``message`` is ``note``, ``source`` is ``deprecatedSource``, ``firstTimestamp``,
``lastTimestamp`` and ``count`` are ``deprecated*``, ``reportingComponent`` is
``reportingController``). The double stores the core form. Creates through
``events.k8s.io/v1`` get the strict validation of pkg/apis/core/validation/events.go
(``ValidateEventCreate``: eventTime, reportingController, reportingInstance, action and reason
required, type Normal or Warning); an old-style Event (no eventTime) gets the legacy check
that the involved object's namespace matches the Event's.
"""

from __future__ import annotations

from typing import Any

from sandbox.kube.errors import Cause
from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]

EVENTS_GROUP = "events.k8s.io"
# core v1 field -> events.k8s.io/v1 field, for the fields whose names differ.
_RENAMED = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}
_CORE_NAMES = {new: old for old, new in _RENAMED.items()}
_REQUIRED = ("eventTime", "reportingController", "reportingInstance", "action", "reason")


def is_events_group(rtype: ResourceType) -> bool:
    """True for the events.k8s.io view of Events."""
    return rtype.group == EVENTS_GROUP and rtype.kind == "Event"


def to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event in its stored, core v1 form."""
    if obj.get("apiVersion") != f"{EVENTS_GROUP}/v1":
        return obj
    core = {_CORE_NAMES.get(k, k): v for k, v in obj.items()}
    core["apiVersion"] = "v1"
    return core


def from_core(obj: Obj) -> Obj:
    """A stored core v1 Event as events.k8s.io/v1 shows it."""
    events = {_RENAMED.get(k, k): v for k, v in obj.items() if k != "series"}
    events["apiVersion"] = f"{EVENTS_GROUP}/v1"
    if "series" in obj:
        events["series"] = {
            "count": obj["series"].get("count"),
            "lastObservedTime": obj["series"].get("lastObservedTime"),
        }
    return events


def event_causes(rtype: ResourceType, core: Obj, created: bool) -> list[Cause]:
    """Validation errors of an Event (core form), named as the request's API names fields."""
    causes = _namespace_causes(core)
    if is_events_group(rtype) and created:
        view = from_core(core)
        causes += [
            Cause(name, "FieldValueRequired", "Required value")
            for name in _REQUIRED
            if not view.get(name)
        ]
        if view.get("type") not in ("Normal", "Warning"):
            causes.append(
                Cause(
                    "type",
                    "FieldValueInvalid",
                    f'Invalid value: "": has invalid value: {view.get("type", "")}',
                )
            )
    return causes


def _namespace_causes(core: Obj) -> list[Cause]:
    if core.get("eventTime"):  # new-style Events are checked by the reporting fields instead
        return []
    involved = (core.get("involvedObject") or {}).get("namespace", "")
    namespace = core["metadata"].get("namespace", "")
    if involved == namespace or (not involved and namespace in ("", "default")):
        return []
    return [
        Cause(
            "involvedObject.namespace",
            "FieldValueInvalid",
            f'Invalid value: "{involved}": does not match event.namespace',
        )
    ]
