"""Namespace deletion, deletecollection and Events on the Kubernetes API double."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import request

pytestmark = pytest.mark.integration


def _namespace(core: client.CoreV1Api, name: str) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))


def test_namespace_deletion_waits_for_finalizers_and_refuses_new_content(
    kube: KubeApiServer,
) -> None:
    """A deleted namespace is Terminating until its content is gone; creates in it are 403.

    Fact: kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/ and the
    NamespaceLifecycle admission plugin ('unable to create new content in namespace %s
    because it is being terminated'); objects with finalizers keep it Terminating.
    """
    core = client.CoreV1Api(kube.api_client())
    _namespace(core, "doomed")
    kept = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="kept", finalizers=["x.io/y"]))
    core.create_namespaced_config_map("doomed", kept)
    core.create_namespaced_config_map(
        "doomed", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="plain"))
    )
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    assert [c.metadata.name for c in core.list_namespaced_config_map("doomed").items] == ["kept"]
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(
            "doomed", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
        )
    assert caught.value.status == 403
    assert "unable to create new content in namespace doomed because it is being terminated" in (
        caught.value.body
    )
    core.patch_namespaced_config_map("kept", "doomed", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as caught:
        core.read_namespace("doomed")
    assert caught.value.status == 404


def test_delete_collection_by_label(kube: KubeApiServer) -> None:
    """DELETE on a collection removes what the selector matches and lists it.

    Fact: kubernetes/kubernetes generic registry store.go DeleteCollection (lists with the
    options, deletes each, returns the list of deleted items).
    """
    core = client.CoreV1Api(kube.api_client())
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        core.create_namespaced_config_map(
            "default",
            client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"tier": tier})),
        )
    code, deleted, _ = request(
        kube, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=tier%3Dweb"
    )
    assert code == 200 and deleted["kind"] == "ConfigMapList"
    left = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
    assert left == ["c"]


def test_events_are_one_set_seen_through_two_apis(kube: KubeApiServer) -> None:
    """An events.k8s.io/v1 Event is also a core v1 Event, with its fields renamed.

    Fact: k8s.io/kubernetes pkg/apis/events/v1/conversion.go (regarding <-> involvedObject,
    note <-> message, reportingController <-> reportingComponent) and
    /work/shared/facts/webhooks-git-libs.md §3.6 (EventsV1Api with event_time,
    reporting_controller, reporting_instance).
    """
    events = client.EventsV1Api(kube.api_client())
    event = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="e1"),
        event_time=datetime.now(UTC),
        reporting_controller="gitops-reverser",
        reporting_instance="w-1",
        action="Commit",
        reason="Committed",
        note="wrote 2 files",
        type="Normal",
        regarding=client.V1ObjectReference(kind="ConfigMap", name="a", namespace="default"),
    )
    created = events.create_namespaced_event("default", event)
    assert created.note == "wrote 2 files" and created.regarding.name == "a"
    core_view = client.CoreV1Api(kube.api_client()).read_namespaced_event("e1", "default")
    assert core_view.message == "wrote 2 files"
    assert core_view.involved_object.name == "a"
    assert core_view.reporting_component == "gitops-reverser"


def test_events_k8s_io_requires_reporting_fields(kube: KubeApiServer) -> None:
    """events.k8s.io/v1 creates need eventTime, reportingController, reportingInstance, ...

    Fact: k8s.io/kubernetes pkg/apis/core/validation/events.go ValidateEventCreate (strict
    validation for events.k8s.io/v1 and newer: Required eventTime, reportingController,
    reportingInstance, action, reason).
    """
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "type": "Normal",
        "note": "n",
    }
    code, status, _ = request(
        kube, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", body
    )
    assert (code, status["reason"]) == (422, "Invalid")
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == ["eventTime", "reportingController", "reportingInstance", "action", "reason"]
