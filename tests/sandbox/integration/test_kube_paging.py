"""Lists in chunks (``limit``/``continue``) on the Kubernetes API double, through the official
client, as kube-apiserver serves them.

Fact: kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks
and the ListMeta / ListOptions reference (``continue``, ``remainingItemCount``, ``limit``): a
chunk holds at most ``limit`` items and a ``continue`` token while more exist; every chunk
carries the first chunk's resourceVersion (one consistent snapshot, whatever was written
between the requests); ``remainingItemCount`` is set only without selectors; ``continue``
beside a ``resourceVersion`` is a 400; a token whose snapshot was compacted away is a 410
Expired whose Status carries a token to go on inconsistently.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import KubeApiServer

pytestmark = pytest.mark.integration


def _cm(name: str, labels: dict[str, str] | None = None) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data={"k": "v"}
    )


def _names(answer: client.V1ConfigMapList) -> list[str]:
    return [item.metadata.name for item in answer.items]


def test_a_chunked_list_is_one_consistent_snapshot(kube: KubeApiServer) -> None:
    core = client.CoreV1Api(kube.api_client())
    for i in range(5):
        core.create_namespaced_config_map("default", _cm(f"cm{i}"))
    first = core.list_namespaced_config_map("default", limit=2)
    assert _names(first) == ["cm0", "cm1"]
    assert first.metadata.remaining_item_count == 3
    rv = first.metadata.resource_version
    # written between the chunks: none of it shows in this list
    core.delete_namespaced_config_map("cm3", "default")
    core.create_namespaced_config_map("default", _cm("cm2a"))
    core.patch_namespaced_config_map("cm4", "default", {"data": {"k": "changed"}})
    second = core.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    assert _names(second) == ["cm2", "cm3"]
    assert second.metadata.resource_version == rv
    assert second.metadata.remaining_item_count == 1
    third = core.list_namespaced_config_map("default", limit=2, _continue=second.metadata._continue)
    assert _names(third) == ["cm4"]
    assert third.items[0].data == {"k": "v"}  # as it was at the snapshot
    assert third.metadata._continue is None and third.metadata.remaining_item_count is None
    assert third.metadata.resource_version == rv
    # a fresh list sees the writes
    assert _names(core.list_namespaced_config_map("default")) == [
        "cm0",
        "cm1",
        "cm2",
        "cm2a",
        "cm4",
    ]


def test_no_limit_answers_everything_and_a_selector_leaves_the_count_out(
    kube: KubeApiServer,
) -> None:
    core = client.CoreV1Api(kube.api_client())
    for i in range(4):
        core.create_namespaced_config_map("default", _cm(f"cm{i}", {"odd": str(i % 2)}))
    whole = core.list_namespaced_config_map("default")
    assert _names(whole) == ["cm0", "cm1", "cm2", "cm3"] and whole.metadata._continue is None
    chunk = core.list_namespaced_config_map("default", limit=1, label_selector="odd=1")
    assert _names(chunk) == ["cm1"]
    assert chunk.metadata._continue and chunk.metadata.remaining_item_count is None
    rest = core.list_namespaced_config_map(
        "default", limit=1, label_selector="odd=1", _continue=chunk.metadata._continue
    )
    assert _names(rest) == ["cm3"] and rest.metadata._continue is None


def test_continue_beside_a_resource_version_or_garbled_is_a_400(kube: KubeApiServer) -> None:
    core = client.CoreV1Api(kube.api_client())
    for i in range(3):
        core.create_namespaced_config_map("default", _cm(f"cm{i}"))
    token = core.list_namespaced_config_map("default", limit=1).metadata._continue
    with pytest.raises(ApiException) as beside:
        core.list_namespaced_config_map("default", limit=1, _continue=token, resource_version="1")
    assert beside.value.status == 400
    with pytest.raises(ApiException) as garbled:
        core.list_namespaced_config_map("default", limit=1, _continue="not-a-token")
    assert garbled.value.status == 400
    assert json.loads(garbled.value.body)["reason"] == "BadRequest"


def test_a_token_past_the_kept_history_is_a_410_with_an_inconsistent_token() -> None:
    kube = KubeApiServer(history=3)
    kube.start()
    try:
        core = client.CoreV1Api(kube.api_client())
        for i in range(3):
            core.create_namespaced_config_map("default", _cm(f"cm{i}"))
        token = core.list_namespaced_config_map("default", limit=1).metadata._continue
        for i in range(4):  # more writes than the history keeps: the snapshot is compacted
            core.patch_namespaced_config_map("cm2", "default", {"data": {"k": str(i)}})
        with pytest.raises(ApiException) as gone:
            core.list_namespaced_config_map("default", limit=1, _continue=token)
        status = json.loads(gone.value.body)
        assert gone.value.status == 410 and status["reason"] == "Expired"
        onward = status["metadata"]["continue"]
        rest = core.list_namespaced_config_map("default", limit=5, _continue=onward)
        assert _names(rest) == ["cm1", "cm2"]
        assert rest.items[1].data == {"k": "3"}  # the latest state, not the snapshot's
    finally:
        kube.stop()
