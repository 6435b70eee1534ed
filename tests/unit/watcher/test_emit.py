"""From watched objects to ObjectEvents (M1, M2, M10). Operations map as the upstream operator
maps them, with deletion as intent: an object with a deletionTimestamp is a DELETE at once
(facts/upstream-gitops-reverser.md §1.2, "Operation mapping")."""

from __future__ import annotations

from typing import Any

from services.watcher.emit import (
    listed_operation,
    object_event,
    operation_of,
    swept_event,
)
from shared.decide.watches import WatchKey, WatchSpec
from shared.model.events import OPERATIONS, GitTargetRef, ManagerEntry
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.manifest import sanitise
from shared.model.resources import ApiResource
from shared.store.watches import KnownObject

UID = GitTargetUid("target-uid")


def _spec(resource: ApiResource) -> WatchSpec:
    key = WatchKey(UID, resource.group, resource.resource, "team-a")
    return WatchSpec(
        key,
        resource,
        "default",
        GitTargetRef(UID, "team-a", "t"),
        BranchKey("bk"),
        frozenset(OPERATIONS),
        "OnEvent",
    )


CONFIGMAPS = _spec(ApiResource("", "v1", "configmaps", "ConfigMap", True))
SECRETS = _spec(ApiResource("", "v1", "secrets", "Secret", True))


def _object(kind: str = "ConfigMap", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "data": {"k": "dmFsdWU="},
        "metadata": {
            "name": "x",
            "namespace": "team-a",
            "uid": "obj-uid",
            "resourceVersion": "42",
            **meta,
            "managedFields": [
                {"manager": "kubectl", "operation": "Update", "time": "2030-01-01T00:00:01Z"},
                {"manager": "old", "operation": "Apply", "time": "2030-01-01T00:00:00Z"},
            ],
        },
    }


def test_watch_types_map_to_operations() -> None:
    assert operation_of("ADDED", _object()) == "CREATE"
    assert operation_of("MODIFIED", _object()) == "UPDATE"
    assert operation_of("DELETED", _object()) == "DELETE"
    assert operation_of("BOOKMARK", _object()) is None
    terminating = _object(deletionTimestamp="2030-01-01T00:00:00Z")
    assert operation_of("MODIFIED", terminating) == "DELETE"
    assert listed_operation(_object(), known=False) == "CREATE"
    assert listed_operation(_object(), known=True) == "UPDATE"
    assert listed_operation(terminating, known=True) == "DELETE"


def test_event_carries_sanitised_body_identity_and_latest_managers() -> None:
    obj = _object(labels={"app": "x"})
    event = object_event(CONFIGMAPS, "UPDATE", obj, 5.0)
    assert event.body == sanitise(obj)
    assert event.managers == (ManagerEntry("kubectl", "Update", "2030-01-01T00:00:01Z"),)
    assert (event.uid, event.resource_version, event.observed_at) == ("obj-uid", "42", 5.0)
    assert event.object_id.kind == "ConfigMap" and event.object_id.namespace == "team-a"
    assert not event.sensitive
    assert object_event(CONFIGMAPS, "DELETE", obj, 5.0).body is None


def test_a_secret_carries_its_identity_only() -> None:
    event = object_event(SECRETS, "CREATE", _object("Secret", annotations={"a": "b"}), 1.0)
    assert event.sensitive
    assert event.body == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "x", "namespace": "team-a"},
    }


def test_a_swept_object_is_a_delete_with_what_the_watch_remembered() -> None:
    event = swept_event(CONFIGMAPS, "gone", KnownObject("old-uid", "ConfigMap", "v1"), "99", 2.0)
    assert (event.operation, event.uid, event.resource_version) == ("DELETE", "old-uid", "99")
    assert event.object_id.name == "gone" and event.body is None
