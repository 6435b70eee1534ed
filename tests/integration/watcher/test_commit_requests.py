"""CommitRequests on the watcher against the sandbox API and real Redis (P6): published
once to the GitTarget's branch, the branch worker's outcome projected onto the status, a
missing GitTarget stalled, and a finished request deleted after the TTL (injected clock)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import NotFoundError

from shared.model.commit_requests import COMMITTED, CommitRequestItem, Outcome
from shared.store.leases import Leases
from tests.integration.watcher.harness import GROUP, Rig, mirror_setup

pytestmark = pytest.mark.integration

NS = "team-a"


def _request(name: str = "save", target: str = "target", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "CommitRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"targetRef": {"name": target}, **spec},
    }


def _published(rig: Rig) -> list[CommitRequestItem]:
    return [item for _, item in rig.log if isinstance(item, CommitRequestItem)]


def _record(rig: Rig, uid: str, outcome: Outcome) -> None:
    """Record ``outcome`` as the branch worker does: as the owner of the request's branch."""
    bk = next(b for b, item in rig.log if isinstance(item, CommitRequestItem) and item.uid == uid)
    lease = Leases(rig.redis, rig.keys, 60_000).acquire(bk, "owner")
    assert lease is not None
    rig.commit_requests().record(lease, uid, outcome)


def _status(rig: Rig, name: str = "save") -> dict[str, Any]:
    return dict(rig.cluster.get(GROUP, "CommitRequest", name, NS).get("status") or {})


def test_a_request_is_published_once_to_its_branch(rig: Rig, repo_url: str) -> None:
    """P6: the request reaches the GitTarget's branch stream with its spec, once however
    many passes see it, and reads Reconciling until the branch worker answers."""
    target_uid = mirror_setup(rig, repo_url, ns=NS)
    made = rig.cluster.create(_request(message="save: now", closeDelaySeconds=7))
    rig.burst()
    rig.burst()
    items = _published(rig)
    assert len(items) == 1
    item = items[0]
    assert (item.target.uid, item.uid) == (target_uid, made["metadata"]["uid"])
    assert (item.message, item.close_delay_s) == ("save: now", 7)
    conditions = rig.cluster.conditions("CommitRequest", "save", NS)
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Reconciling"]["status"] == "True"


def test_the_outcome_becomes_the_status(rig: Rig, repo_url: str) -> None:
    """P6: Committed is Ready and Pushed, with status.branch and status.sha in one write."""
    mirror_setup(rig, repo_url, ns=NS)
    made = rig.cluster.create(_request())
    rig.burst()
    sha = "1" * 40
    _record(
        rig, made["metadata"]["uid"], Outcome(COMMITTED, branch="main", sha=sha, at=rig.clock.now)
    )
    rig.watcher().sync_commit_requests()
    status = _status(rig)
    assert (status["branch"], status["sha"]) == ("main", sha)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("True", COMMITTED)
    assert conditions["Pushed"]["status"] == "True"
    assert conditions["AuthorAttributed"]["reason"] == "AuthorCaptureDisabled"


def test_a_missing_gittarget_stalls_the_request(rig: Rig, repo_url: str) -> None:
    """P6: a request naming no GitTarget of its namespace cannot recover: Stalled, and it
    is published nowhere."""
    mirror_setup(rig, repo_url, ns=NS)
    rig.cluster.create(_request(target="nope"))
    rig.burst()
    conditions = rig.cluster.conditions("CommitRequest", "save", NS)
    assert conditions["Stalled"]["status"] == "True"
    assert conditions["Ready"]["reason"] == "GitTargetNotFound"
    assert _published(rig) == []


def test_a_finished_request_is_deleted_after_the_ttl(rig: Rig, repo_url: str) -> None:
    """P6: deleted ``commit_request_ttl`` after it finished (not before), with its Redis
    record; the Go operator keeps them for ever."""
    rig.settings_overrides["commit_request_ttl"] = timedelta(minutes=10)
    mirror_setup(rig, repo_url, ns=NS)
    made = rig.cluster.create(_request())
    uid = made["metadata"]["uid"]
    rig.burst()
    store = rig.commit_requests()
    _record(rig, uid, Outcome(COMMITTED, branch="main", sha="2" * 40, at=rig.clock.now))
    watcher = rig.watcher()
    watcher.sync_commit_requests()  # finished now: Ready=True at rig.clock.now
    rig.clock.now += 599
    watcher.sync_commit_requests()
    assert _status(rig)["sha"] == "2" * 40, "still there a second before the TTL"
    rig.clock.now += 1
    watcher.sync_commit_requests()
    with pytest.raises(NotFoundError):
        rig.cluster.get(GROUP, "CommitRequest", "save", NS)
    assert store.outcome(uid) is None
