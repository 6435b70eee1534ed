"""The watcher side of a GitTarget's hand controls (P7, P8), against the sandbox API double and
real Redis: what each watch publishes, where it goes, and what status answers.

- P7 ``spec.suspend``: the watches keep collecting, their events wait in the GitTarget's backlog
  (nothing reaches the branch), Ready shows ``Suspended``; setting it back moves the newest
  event of each object onto the branch, in order.
- P10 ``status.remote``: what the branch's owner verified, as it published it.
- P8 the reconcile annotation: every watch lists again and publishes every object (also those
  it published before at the same resourceVersion) and the names it found; once they all did,
  ``status.lastHandledReconcileAt`` is the annotation's value. A value too long for status fails
  only that GitTarget, with a condition.
"""

from __future__ import annotations

import pytest

from shared.model.ids import Branch
from shared.model.target_controls import RECONCILE_ANNOTATION
from shared.model.times import rfc3339
from shared.store.branch_state import BranchStates
from shared.store.leases import Leases
from shared.store.suspension import Suspensions
from tests.integration.watcher.harness import GROUP, Rig, git_target, mirror_setup

pytestmark = pytest.mark.integration


def _suspend(rig: Rig, value: bool) -> None:
    rig.cluster.patch(GROUP, "GitTarget", "target", "team-a", {"spec": {"suspend": value}})


def _request(rig: Rig, value: str, name: str = "target") -> None:
    body = {"metadata": {"annotations": {RECONCILE_ANNOTATION: value}}}
    rig.cluster.patch(GROUP, "GitTarget", name, "team-a", body)


def _status(rig: Rig, name: str = "target") -> dict[str, object]:
    return dict(rig.cluster.get(GROUP, "GitTarget", name, "team-a").get("status") or {})


def test_a_suspended_targets_edits_wait_and_reach_the_branch_on_resume(
    rig: Rig, repo_url: str
) -> None:
    uid = mirror_setup(rig, repo_url, suspend=True)
    c = rig.cluster
    c.configmap("team-a", "app", {"mode": "blue"})
    c.configmap("team-a", "gone", {"mode": "x"})
    rig.burst()
    c.patch("v1", "ConfigMap", "app", "team-a", {"data": {"mode": "green"}})
    c.delete("v1", "ConfigMap", "gone", "team-a")
    rig.burst()

    assert [e.operation for e in rig.published(repo_url)] == [
        "CREATE",
        "CREATE",
        "UPDATE",
        "DELETE",
    ], "the watches kept collecting"
    assert rig.events(repo_url) == [], "nothing reached the branch"
    ready = rig.cluster.conditions("GitTarget", "target", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Suspended")
    suspensions = Suspensions(rig.redis, rig.keys)
    assert suspensions.suspended() == {uid} and suspensions.backlog_size(uid) == 2

    _suspend(rig, False)
    rig.burst()
    moved = [(e.operation, e.object_id.name) for e in rig.events(repo_url)]
    assert moved == [("UPDATE", "app"), ("DELETE", "gone")]
    app = next(e for e in rig.events(repo_url) if e.object_id.name == "app")
    assert app.body is not None and app.body["data"] == {"mode": "green"}
    assert suspensions.suspended() == set()
    ready = rig.cluster.conditions("GitTarget", "target", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "Succeeded")

    c.patch("v1", "ConfigMap", "app", "team-a", {"data": {"mode": "red"}})
    rig.burst()
    assert [e.object_id.name for e in rig.events(repo_url)] == ["app", "gone", "app"]


def test_a_reconcile_request_publishes_everything_again_and_is_answered(
    rig: Rig, repo_url: str
) -> None:
    mirror_setup(rig, repo_url)
    c = rig.cluster
    c.configmap("team-a", "app", {"mode": "blue"})
    c.configmap("team-a", "db", {"size": "1"})
    rig.burst()
    assert len(rig.published(repo_url)) == 2
    rig.burst()  # a restart with cursors publishes nothing again
    assert len(rig.published(repo_url)) == 2

    _request(rig, "2026-12-06T09:00:00Z")
    rig.burst()
    again = rig.published(repo_url)[2:]
    assert sorted(e.object_id.name for e in again) == ["app", "db"]
    listings = rig.listings(repo_url)
    assert [sorted(listing.names) for listing in listings] == [["app", "db"]]
    assert _status(rig).get("lastHandledReconcileAt") == "2026-12-06T09:00:00Z"

    rig.burst()  # handled: the same value asks for nothing more
    assert len(rig.published(repo_url)) == 4
    _request(rig, "2026-12-06T09:05:00Z")
    rig.burst()
    assert len(rig.published(repo_url)) == 6
    assert _status(rig).get("lastHandledReconcileAt") == "2026-12-06T09:05:00Z"


def test_a_reconcile_request_under_prune_never_lists_no_names(rig: Rig, repo_url: str) -> None:
    """P8, M9: ``Never`` keeps every document, so the resync publishes no names to delete."""
    mirror_setup(rig, repo_url, prune={"mode": "Never"})
    rig.cluster.configmap("team-a", "app", {"mode": "blue"})
    rig.burst()
    _request(rig, "r1")
    rig.burst()
    assert [e.object_id.name for e in rig.published(repo_url)] == ["app", "app"]
    assert rig.listings(repo_url) == []
    assert _status(rig).get("lastHandledReconcileAt") == "r1"


def test_a_request_too_long_for_status_fails_only_its_target(rig: Rig, repo_url: str) -> None:
    """T4: the GitTarget shows why; another GitTarget of the namespace is served as before."""
    mirror_setup(rig, repo_url)
    rig.cluster.create(git_target("team-a", name="other", path="clusters/other"))
    _request(rig, "x" * 2000)
    rig.burst()
    ready = rig.cluster.conditions("GitTarget", "target", "team-a")["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "InvalidReconcileRequest")
    other = rig.cluster.conditions("GitTarget", "other", "team-a")["Ready"]
    assert other["status"] == "True"
    assert "lastHandledReconcileAt" not in _status(rig)


def test_status_remote_follows_what_the_branch_owner_verified(rig: Rig, repo_url: str) -> None:
    """P10: a push of ours shows as ``Push``, a later read of the ref advertisement with a new
    commit as ``Fetch``; the same commit read again soon after writes nothing."""
    mirror_setup(rig, repo_url)
    rig.burst()
    assert "remote" not in _status(rig), "nothing verified yet"
    bk = Branch(repo_url, "main").key
    lease = Leases(rig.redis, rig.keys, 60_000).acquire(bk, "w1")
    assert lease is not None
    states = BranchStates(rig.redis, rig.keys)
    states.remember_ours(lease, "a" * 40, (), at=rig.clock.now)
    rig.burst()
    assert _status(rig)["remote"] == {
        "revision": "a" * 40,
        "lastVerifiedAt": rfc3339(rig.clock.now),
        "verifiedBy": "Push",
    }
    states.publish_tip(lease, "b" * 40, read_at=rig.clock.now + 60)
    rig.burst()
    shown = _status(rig)["remote"]
    assert isinstance(shown, dict) and (shown["revision"], shown["verifiedBy"]) == (
        "b" * 40,
        "Fetch",
    )
    states.publish_tip(lease, "b" * 40, read_at=rig.clock.now + 120)
    rig.burst()
    assert _status(rig)["remote"] == shown, "the same commit a minute later: no write"
