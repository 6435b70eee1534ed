"""The API server double's audit webhook backend: EventLists, batching, identities, drops.

Facts: upstream-gitops-reverser.md §1.4 (the receiver gets ``EventList``s POSTed per batch;
the accept gate reads stage, verb, response code, dry-run and subresource) and §9.15 (the e2e
audit policy: RequestResponse with omitManagedFields for create/update/patch/delete/
deletecollection, None for ``*/status``; apiserver flags ``audit-webhook-batch-max-wait=1s``,
``batch-max-size=10``). The Event fields' shapes (auditID, stage, objectRef's uid and
resourceVersion, responseStatus.code, stageTimestamp, user.extra) and the batch backend's
asynchronous retry-then-drop come from the ``audit.k8s.io/v1`` reference and kube-apiserver's
audit documentation on kubernetes.io: /work/shared/facts has no fact for them, so the double
keeps to what the product reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from sandbox.kube.audit import audited
from sandbox.kube.server import AccessRule, AuditWebhook, KubeApiServer
from sandbox.webhook_sink import WebhookSink
from tests.helpers import wait_until

pytestmark = pytest.mark.integration

TOKENS = {"tok-alice": "alice", "tok-bob": "system:serviceaccount:ci:deployer"}
RULES = [AccessRule("*", ("*",), ("*",), ("*",))]
EXTRA = {"alice": {"configbutler.ai/claims/display-name": ["Alice Liddell"]}}


@pytest.fixture
def sink() -> Iterator[WebhookSink]:
    s = WebhookSink(b"unused").start()
    yield s
    s.stop()


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    s = KubeApiServer(tokens=TOKENS, rules=RULES)
    s.start()
    yield s
    s.stop()


def _cm(name: str, value: str = "1") -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": value})


def _events(sink: WebhookSink, count: int) -> list[dict[str, Any]]:
    """The first ``count`` events delivered, in order, awaited."""
    found: list[dict[str, Any]] = []

    def enough() -> bool:
        found[:] = [e for d in sink.deliveries() for e in json.loads(d.body)["items"]]
        return len(found) >= count

    wait_until(enough, 20, f"{count} audit events")
    return found[:count]


def test_each_mutating_request_is_two_events_with_the_token_s_user_and_the_object(
    server: KubeApiServer, sink: WebhookSink
) -> None:
    """§1.4/§9.15: a create by alice and a patch by bob arrive as EventLists, POSTed with the
    webhook kubeconfig's bearer token, with the user, verb, objectRef (uid and
    resourceVersion of the object as stored), the response code and the response object
    without managedFields; reads are not audited."""
    server.set_audit_webhook(AuditWebhook(f"{sink.url}/audit", "hook-token", user_extra=EXTRA))
    alice = client.CoreV1Api(server.api_client("tok-alice"))
    bob = client.CoreV1Api(server.api_client("tok-bob"))
    created = alice.create_namespaced_config_map("default", _cm("a"))
    alice.read_namespaced_config_map("a", "default")  # a read: level None
    patched = bob.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    events = _events(sink, 4)
    assert all(d.headers["Authorization"] == "Bearer hook-token" for d in sink.deliveries())
    assert all(json.loads(d.body)["kind"] == "EventList" for d in sink.deliveries())
    assert [(e["stage"], e["verb"]) for e in events] == [
        ("RequestReceived", "create"),
        ("ResponseComplete", "create"),
        ("RequestReceived", "patch"),
        ("ResponseComplete", "patch"),
    ]
    create, patch = events[1], events[3]
    assert create["user"]["username"] == "alice"
    assert create["user"]["extra"] == EXTRA["alice"]
    assert patch["user"]["username"] == "system:serviceaccount:ci:deployer"
    assert "extra" not in patch["user"]
    assert create["objectRef"] == {
        "resource": "configmaps",
        "apiGroup": "",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "a",
        "uid": created.metadata.uid,
        "resourceVersion": created.metadata.resource_version,
    }
    assert patch["objectRef"]["resourceVersion"] == patched.metadata.resource_version
    assert create["responseStatus"]["code"] == 201 and patch["responseStatus"]["code"] == 200
    assert create["auditID"] == events[0]["auditID"] != patch["auditID"]
    assert create["stageTimestamp"].endswith("Z")
    assert create["responseObject"]["metadata"]["uid"] == created.metadata.uid
    assert "managedFields" not in create["responseObject"]["metadata"]
    assert created.metadata.managed_fields  # the object has them; the audit copy omits them


def test_dry_runs_and_failures_are_recorded_as_the_policy_says(
    server: KubeApiServer, sink: WebhookSink
) -> None:
    """A dry-run create carries ``dryRun=All`` in its requestURI; a failed request its code
    and no uid; a ``*/status`` write and every read are level None (§9.15 policy)."""
    server.set_audit_webhook(AuditWebhook(sink.url, "t"))
    alice = client.CoreV1Api(server.api_client("tok-alice"))
    alice.create_namespaced_config_map("default", _cm("d"), dry_run="All")
    with pytest.raises(client.ApiException):
        alice.create_namespaced_config_map("default", _cm("bad name"))
    events = [e for e in _events(sink, 4) if e["stage"] == "ResponseComplete"]
    assert "dryRun=All" in events[0]["requestURI"]
    assert events[1]["responseStatus"]["code"] == 422
    assert "uid" not in events[1]["objectRef"]
    assert not audited("update", "status") and not audited("get", "")
    assert audited("patch", "scale") and audited("deletecollection", "")


def test_a_batch_is_sent_when_max_size_events_wait(
    server: KubeApiServer, sink: WebhookSink
) -> None:
    """``batch-max-size``: with a max wait of an hour, a batch goes only because it is full,
    and no batch holds more than max-size events."""
    server.set_audit_webhook(AuditWebhook(sink.url, "t", batch_max_size=4, batch_max_wait=3600))
    api = client.CoreV1Api(server.api_client("tok-alice"))
    for i in range(3):  # six events: one full batch of four goes, two wait for the hour
        api.create_namespaced_config_map("default", _cm(f"s{i}"))
    delivered = sink.wait_for(1, 20)
    assert len(json.loads(delivered[0].body)["items"]) == 4
    assert len(sink.deliveries()) == 1


def test_a_partial_batch_is_sent_after_max_wait(server: KubeApiServer, sink: WebhookSink) -> None:
    """``batch-max-wait``: a batch far below max-size is sent once the wait has passed."""
    server.set_audit_webhook(AuditWebhook(sink.url, "t", batch_max_size=1000, batch_max_wait=0.2))
    client.CoreV1Api(server.api_client("tok-alice")).create_namespaced_config_map(
        "default", _cm("w")
    )
    delivered = sink.wait_for(1, 20)
    assert len(json.loads(delivered[0].body)["items"]) == 2


def test_defaults_are_the_facts_e2e_flags() -> None:
    """§9.15: ``batch-max-size=10``, ``batch-max-wait=1s``."""
    webhook = AuditWebhook("http://x")
    assert (webhook.batch_max_size, webhook.batch_max_wait) == (10, 1.0)


def test_a_failing_webhook_never_blocks_the_api_and_its_batch_is_dropped(
    server: KubeApiServer, sink: WebhookSink
) -> None:
    """The batch backend sends asynchronously: API requests answer while the webhook fails;
    after its attempts the batch is dropped (counted), not retried for ever."""
    sink.status = 500
    backend = server.set_audit_webhook(
        AuditWebhook(sink.url, "t", batch_max_size=2, attempts=2, initial_backoff=0.01)
    )
    assert backend is not None
    api = client.CoreV1Api(server.api_client("tok-alice"))
    api.create_namespaced_config_map("default", _cm("f"))
    api.delete_namespaced_config_map("f", "default")
    wait_until(lambda: backend.dropped_batches >= 1, 20, "a dropped batch")
    assert len(sink.deliveries()) >= 2  # both attempts were made
    assert backend.sent == 0


def test_a_delete_s_event_names_the_uid_only_in_its_status_answer(
    server: KubeApiServer, sink: WebhookSink
) -> None:
    """upstream-0.50.md (#399): a DELETE answers a ``Status``, and its audit event's
    ``objectRef`` carries no uid; the uid is in ``responseObject.details.uid`` (P5)."""
    server.set_audit_webhook(AuditWebhook(f"{sink.url}/audit", "hook-token"))
    alice = client.CoreV1Api(server.api_client("tok-alice"))
    created = alice.create_namespaced_config_map("default", _cm("gone"))
    alice.delete_namespaced_config_map("gone", "default")
    delete = _events(sink, 4)[3]
    assert (delete["stage"], delete["verb"]) == ("ResponseComplete", "delete")
    assert "uid" not in delete["objectRef"] and delete["objectRef"]["name"] == "gone"
    assert delete["responseObject"]["kind"] == "Status"
    assert delete["responseObject"]["details"]["uid"] == created.metadata.uid
