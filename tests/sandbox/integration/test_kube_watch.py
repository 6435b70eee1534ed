"""Watch on the Kubernetes API double through the official client's watch.Watch().stream."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import KubeApiServer

pytestmark = pytest.mark.integration


def _cm(name: str, labels: dict[str, str] | None = None) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data={"k": "v"}
    )


def _events(stream: Any) -> list[tuple[str, str]]:
    return [(e["type"], e["object"].metadata.name) for e in stream]


def test_watch_replays_history_after_a_resource_version(kube: KubeApiServer) -> None:
    """From a list's resourceVersion, the stream replays what followed, in order.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
    (watch from the list's resourceVersion) and /work/shared/facts/webhooks-git-libs.md §3.6.
    """
    core = client.CoreV1Api(kube.api_client())
    core.create_namespaced_config_map("default", _cm("a"))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("b"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "w"}})
    core.delete_namespaced_config_map("b", "default")
    events = _events(
        watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    )
    assert events == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]


def test_watch_without_version_starts_with_current_objects_then_goes_live(
    kube: KubeApiServer,
) -> None:
    """No resourceVersion: synthetic ADDED for what exists, then live events.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-watch
    (resourceVersion unset or "0": start with synthetic ADDED events of the current state).
    """
    core = client.CoreV1Api(kube.api_client())
    core.create_namespaced_config_map("default", _cm("a"))
    watcher = watch.Watch()
    seen = []
    for event in watcher.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            core.create_namespaced_config_map("default", _cm("b"))
        else:
            watcher.stop()
    assert seen == [("ADDED", "a"), ("ADDED", "b")]


def test_bookmarks_carry_only_a_resource_version(kube: KubeApiServer) -> None:
    """allowWatchBookmarks=true yields BOOKMARK events with kind, apiVersion and the rv.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks and
    /work/shared/facts/webhooks-git-libs.md §3.6 (the client yields BOOKMARKs as raw dicts and
    updates its resource_version from them).
    """
    core = client.CoreV1Api(kube.api_client())
    created = core.create_namespaced_config_map("default", _cm("a"))
    watcher = watch.Watch()
    stream = watcher.stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=created.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=5,
    )
    bookmark = next(e for e in stream if e["type"] == "BOOKMARK")
    watcher.stop()
    assert bookmark["raw_object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": created.metadata.resource_version},
    }
    assert watcher.resource_version == created.metadata.resource_version


def test_timeout_seconds_ends_the_stream(kube: KubeApiServer) -> None:
    """timeoutSeconds closes an idle stream; the client then stops (no retry with a timeout).

    Fact: /work/shared/facts/webhooks-git-libs.md §3.6 ("With timeout_seconds set there is no
    retry at all"); kubernetes API reference ListOptions.timeoutSeconds.
    """
    core = client.CoreV1Api(kube.api_client())
    started = time.monotonic()
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version="1", timeout_seconds=1
        )
    )
    assert events == []
    assert 0.9 <= time.monotonic() - started < 5


def test_too_old_resource_version_is_410_expired() -> None:
    """Past the kept history, the stream's ERROR event is a 410 Expired Status.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go
    ('too old resource version: %d (%d)', NewResourceExpired) and
    /work/shared/facts/webhooks-git-libs.md §3.6 (the client retries once, then raises
    ApiException 410 "Expired: too old resource version...").
    """
    kube = KubeApiServer(history=3)
    kube.start()
    try:
        core = client.CoreV1Api(kube.api_client())
        for name in "abcdef":
            core.create_namespaced_config_map("default", _cm(name))
        pool = kube.api_client().rest_client.pool_manager
        raw = pool.request(
            "GET",
            kube.url + "/api/v1/namespaces/default/configmaps"
            "?watch=true&resourceVersion=2&timeoutSeconds=1",
        )
        assert raw.status == 200
        event = json.loads(raw.data.splitlines()[0])
        assert event["type"] == "ERROR"
        assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
        assert event["object"]["message"] == "too old resource version: 2 (6)"
        with pytest.raises(ApiException) as caught:
            list(
                watch.Watch().stream(
                    core.list_namespaced_config_map, "default", resource_version="2"
                )
            )
        assert caught.value.status == 410
        assert caught.value.reason.startswith("Expired: too old resource version: 2")
    finally:
        kube.stop()


def test_selector_watch_sees_objects_leave_and_enter(kube: KubeApiServer) -> None:
    """An object that stops matching is DELETED for that watcher, and ADDED when back.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/storage/cacher/
    cache_watcher.go convertToWatchEvent (curObjPasses/oldObjPasses -> ADDED, MODIFIED or
    DELETED).
    """
    core = client.CoreV1Api(kube.api_client())
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("a", {"tier": "web"}))
    core.create_namespaced_config_map("default", _cm("x", {"tier": "db"}))
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"tier": "db"}}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"tier": "web"}}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    events = _events(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="tier=web",
            resource_version=rv,
            timeout_seconds=1,
        )
    )
    assert events == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "a"), ("MODIFIED", "a")]


def test_custom_resources_and_field_selectors_watch(kube: KubeApiServer) -> None:
    """Custom resources stream as dicts; a field selector on metadata.name narrows it.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
    customresource/strategy.go objectMetaFieldsSet (metadata.name, metadata.namespace).
    """
    custom = client.CustomObjectsApi(kube.api_client())
    args = ("source.toolkit.fluxcd.io", "v1", "default", "gitrepositories")
    rv = custom.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]
    for name in ("one", "two"):
        custom.create_namespaced_custom_object(
            *args,
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": name},
                "spec": {"url": "https://example.com/r.git", "interval": "1m"},
            },
        )
    stream = watch.Watch().stream(
        custom.list_namespaced_custom_object,
        *args,
        field_selector="metadata.name=two",
        resource_version=rv,
        timeout_seconds=1,
    )
    events = [(e["type"], e["object"]["metadata"]["name"]) for e in stream]
    assert events == [("ADDED", "two")]


def test_watch_1_is_a_watch_too(kube: KubeApiServer) -> None:
    """`watch=1` starts a watch as `watch=true` does; events are newline-delimited JSON.

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
    (watch=1) and the watch event shape {"type": ..., "object": ...}.
    """
    client.CoreV1Api(kube.api_client()).create_namespaced_config_map("default", _cm("a"))
    pool = kube.api_client().rest_client.pool_manager
    raw = pool.request(
        "GET", kube.url + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
    )
    lines = raw.data.splitlines()
    assert raw.status == 200 and raw.headers["Content-Type"] == "application/json"
    first = json.loads(lines[0])
    assert first["type"] == "ADDED" and first["object"]["kind"] == "ConfigMap"


def test_a_watch_answers_with_headers_before_any_event(kube: KubeApiServer) -> None:
    """The API server starts a watch's chunked response at once, before the first event.

    Source: k8s.io/apiserver pkg/endpoints/handlers/watch.go (``serveWatch`` writes the 200
    header and flushes before it reads the first event). Clients rely on it to know the watch
    is open (and to be able to cut it).
    """
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", kube.port, timeout=5)
    conn.request(
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=30",
    )
    response = conn.getresponse()  # times out (and fails) if headers wait for an event
    assert response.status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    conn.close()
