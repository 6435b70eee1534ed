"""The store facts of D3's catch-up check (issue 11, the apply race's path 1), with a real
watcher, the sandbox's API server and real Redis: the watcher publishes which watches feed a
GitTarget's branch, and the dispatcher's ``behind`` finds an API edit the watcher has not
published (it was down) by comparing the API's list with what each watch recorded."""

from __future__ import annotations

import pytest

from services.dispatcher.mirrored import behind
from shared.kube.clients import ClientFactory
from shared.model.ids import Branch, GitTargetUid
from shared.settings import Settings
from shared.store.branch_state import BranchStates
from shared.store.streams import EventStream
from shared.store.watches import WatchFeed, WatchState
from tests.integration.watcher.harness import Rig, mirror_setup

pytestmark = pytest.mark.integration


def _behind(rig: Rig, url: str) -> list[str]:
    settings = Settings(key_prefix=rig.prefix)
    local = ClientFactory(settings, rig.clock, local=rig.cluster.server.api_client()).local()
    state = WatchState(rig.redis, rig.keys)
    return behind(Branch(url, "main").key, rig.config, state, lambda _name: local.client)


def test_the_watcher_publishes_the_watches_that_feed_a_gittarget(rig: Rig, repo_url: str) -> None:
    """The feeds name the watch's resource, version, namespace and cluster."""
    uid = GitTargetUid(mirror_setup(rig, repo_url))
    rig.burst()
    feeds = WatchState(rig.redis, rig.keys).feeds([uid])
    assert feeds == [WatchFeed(uid, "", "v1", "configmaps", "ConfigMap", "team-a", "default")]


def test_an_edit_made_while_the_watcher_is_down_is_found_behind(rig: Rig, repo_url: str) -> None:
    """Issue 11 path 1: with every event published the branch's watches are caught up; an
    edit, a new object and a delete made while no watcher runs are each found; once the
    watcher ran again, nothing is behind."""
    mirror_setup(rig, repo_url)
    for name in ("a", "b"):
        rig.cluster.configmap("team-a", name, {"n": name})
    rig.burst()
    assert _behind(rig, repo_url) == []
    rig.cluster.patch("v1", "ConfigMap", "a", "team-a", {"data": {"n": "edited"}})
    rig.cluster.configmap("team-a", "c", {"n": "c"})
    rig.cluster.delete("v1", "ConfigMap", "b", "team-a")
    assert sorted(_behind(rig, repo_url)) == [
        "team-a/configmaps/a",
        "team-a/configmaps/b",
        "team-a/configmaps/c",
    ]
    rig.burst()
    assert _behind(rig, repo_url) == []


def test_the_branch_state_counts_events_not_yet_acknowledged(rig: Rig, repo_url: str) -> None:
    """Q3/D3: published and unread, then read and unacknowledged, the events keep the branch
    busy; acknowledged, they are gone from the count."""
    mirror_setup(rig, repo_url)
    rig.cluster.configmap("team-a", "a", {"n": "a"})
    rig.burst()
    bk = Branch(repo_url, "main").key
    states, stream = BranchStates(rig.redis, rig.keys), EventStream(rig.redis, rig.keys)
    assert states.read(bk).view().unacked == 1
    stream.ensure_group(bk)
    entries = stream.read(bk, "w1", 10, None)
    assert len(entries) == 1 and states.read(bk).unacked == 1
    stream.ack(bk, entries)
    assert states.read(bk).view().unacked == 0
