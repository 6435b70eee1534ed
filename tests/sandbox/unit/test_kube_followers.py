"""The API double's store wakes an open watch only for events it may send (sandbox/kube/store.py).

The cacher dispatches each event to the watchers whose filter it passes, and an open watcher
is kept current: other namespaces' writes never end it with 410 (kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go, ``dispatchEvent``). A watch
started from a version older than the kept history is still 410 Expired
(tests/sandbox/integration/test_kube_watch.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.kube.errors import ApiError
from sandbox.kube.store import Store

CONFIGMAPS = ("", "configmaps")
SECRETS = ("", "secrets")


def _cm(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}, "data": {}}


def test_a_quiet_watch_sleeps_through_other_namespaces_and_is_never_expired_by_them() -> None:
    store = Store(history=3)
    cursor = store.resource_version
    follower = store.follow(CONFIGMAPS, "quiet")
    assert follower.events_after(cursor) == ([], cursor)  # nothing yet, history read once
    for n in range(10):  # far past the kept history
        store.put(CONFIGMAPS, _cm("busy", f"cm-{n}"))
        store.put(SECRETS, _cm("quiet", f"s-{n}"))
    assert follower.wait_past(cursor, 0.0) is False
    events, latest = follower.events_after(cursor)
    assert (events, latest) == ([], store.resource_version)
    store.put(CONFIGMAPS, _cm("quiet", "mine"))
    assert follower.wait_past(latest, 0.0) is True
    events, _ = follower.events_after(latest)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("ADDED", "mine")]


def test_a_flood_elsewhere_with_no_read_in_between_loses_a_quiet_watch_nothing() -> None:
    """As a stream reads: woken only by its own event, after others overflowed the history."""
    store = Store(history=3)
    store.put(CONFIGMAPS, _cm("quiet", "before"))
    cursor = store.resource_version
    follower = store.follow(CONFIGMAPS, "quiet")
    assert follower.events_after(cursor) == ([], cursor)
    for n in range(10):
        store.put(CONFIGMAPS, _cm("busy", f"cm-{n}"))
    store.put(CONFIGMAPS, _cm("quiet", "mine"))
    assert follower.wait_past(cursor, 0.0) is True
    events, latest = follower.events_after(cursor)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("ADDED", "mine")]
    assert latest == store.resource_version


def test_its_own_events_overflowing_the_history_between_reads_still_expire_a_watch() -> None:
    store = Store(history=3)
    cursor = store.resource_version
    follower = store.follow(CONFIGMAPS, "quiet")
    assert follower.events_after(cursor) == ([], cursor)
    for n in range(5):
        store.put(CONFIGMAPS, _cm("quiet", f"cm-{n}"))
    with pytest.raises(ApiError) as caught:
        follower.events_after(cursor)
    assert caught.value.code == 410


def test_events_between_the_snapshot_and_the_follower_are_read() -> None:
    """A stream lists, then follows: what was written in between is read from its cursor."""
    store = Store(history=10)
    cursor = store.resource_version  # the initial snapshot's version
    store.put(CONFIGMAPS, _cm("quiet", "between"))
    follower = store.follow(CONFIGMAPS, "quiet")
    store.put(CONFIGMAPS, _cm("quiet", "after"))
    events, _ = follower.events_after(cursor)
    assert [e.obj["metadata"]["name"] for e in events] == ["between", "after"]


def test_an_all_namespaces_watch_is_woken_by_each_namespace() -> None:
    store = Store(history=10)
    follower = store.follow(CONFIGMAPS, None)
    cursor = store.resource_version
    store.put(CONFIGMAPS, _cm("a", "x"))
    assert follower.wait_past(cursor, 0.0) is True
    store.put(CONFIGMAPS, _cm("b", "y"))
    events, _ = follower.events_after(cursor)
    assert [e.obj["metadata"]["namespace"] for e in events] == ["a", "b"]


def test_a_watch_from_a_compacted_version_is_still_expired() -> None:
    store = Store(history=3)
    for n in range(6):
        store.put(CONFIGMAPS, _cm("quiet", f"cm-{n}"))
    follower = store.follow(CONFIGMAPS, "quiet")
    with pytest.raises(ApiError) as caught:
        follower.events_after(1)
    assert caught.value.code == 410


def test_a_closed_store_wakes_its_followers_and_an_ended_watch_is_forgotten() -> None:
    store = Store(history=3)
    follower = store.follow(CONFIGMAPS, "quiet")
    follower.close()
    store.put(CONFIGMAPS, _cm("quiet", "after"))
    assert follower.relevant < store.resource_version  # no longer woken
    other = store.follow(CONFIGMAPS, "quiet")
    store.close()
    assert other.wait_past(store.resource_version, 0.0) is True
