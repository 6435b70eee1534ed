"""Cursors: a restarted watcher resumes, an expired cursor relists and sweeps (M1, M9).

"A given Kubernetes server will only preserve a historical record of changes for a limited
time ... clients must handle the case by recognizing the status code 410 Gone, clearing their
local cache, performing a new get or list operation, and starting the watch from the
resourceVersion that was returned" (kubernetes.io/docs/reference/using-api/api-concepts/
#efficient-detection-of-changes). The sandbox's history is bounded the same way, so a small
``history`` makes a cursor expire on demand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from shared.model.config import ApplierRef
from shared.model.ids import Branch, GitTargetUid
from tests.integration.watcher.harness import (
    Cluster,
    Rig,
    mirror_everything,
    mirror_setup,
    sandbox_cluster,
)

pytestmark = pytest.mark.integration

#: Enough history for one burst's list-then-watch, too little to survive the noise below.
SMALL_HISTORY = 8


@pytest.fixture
def forgetful(tmp_path: Path) -> Iterator[Cluster]:
    with sandbox_cluster(tmp_path, history=SMALL_HISTORY) as running:
        yield running


@pytest.fixture
def short_rig(forgetful: Cluster, redis_client: redis.Redis, key_prefix: str) -> Rig:
    """A rig whose API server keeps only SMALL_HISTORY events."""
    return Rig(forgetful, redis_client, key_prefix)


def test_restart_with_a_cursor_resumes_without_a_full_replay(rig: Rig, repo_url: str) -> None:
    """M1: the second watcher starts from the cursor: one edit, one event, no list."""
    mirror_setup(rig, repo_url)
    for name in ("a", "b", "c"):
        rig.cluster.configmap("team-a", name, {"n": name})
    rig.burst()
    assert [e.operation for e in rig.published(repo_url)] == ["CREATE"] * 3

    rig.cluster.patch("v1", "ConfigMap", "b", "team-a", {"data": {"n": "bee"}})
    rig.burst()

    events = rig.published(repo_url)
    assert len(events) == 4
    assert (events[3].operation, events[3].object_id.name) == ("UPDATE", "b")
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="nocursor") == 0
    assert rig.metric("gitops_reverser_watcher_events_published_total", operation="UPDATE") == 1
    assert rig.metric("gitops_reverser_watcher_events_published_total", operation="CREATE") == 0


def _expire_after_deleting(rig: Rig, gone: str) -> None:
    """Delete one object, then write enough elsewhere that the cursor falls out of history."""
    rig.cluster.delete("v1", "ConfigMap", gone, "team-a")
    rig.cluster.configmap("default", "noise", {"i": "0"})
    for i in range(1, SMALL_HISTORY + 2):
        rig.cluster.patch("v1", "ConfigMap", "noise", "default", {"data": {"i": str(i)}})


@pytest.mark.parametrize(("mode", "swept"), [("Always", True), ("OnEvent", False)])
def test_expired_cursor_relists_and_sweeps_per_prune_mode(
    short_rig: Rig, repo_url: str, mode: str, swept: bool
) -> None:
    """M1, M9: after 410 Gone the watch lists again; the object deleted while no watch ran
    becomes a DELETE only under ``prune.mode: Always`` (``OnEvent`` mirrors observed deletes
    only; upstream: facts/upstream-gitops-reverser.md §1.13). The object that did not change is
    not published again (M3: it would be no write)."""
    rig = short_rig
    mirror_setup(rig, repo_url, prune={"mode": mode})
    keep = rig.cluster.configmap("team-a", "keep", {"v": "1"})
    gone = rig.cluster.configmap("team-a", "gone", {"v": "1"})
    rig.burst()
    assert len(rig.published(repo_url)) == 2

    _expire_after_deleting(rig, "gone")
    rig.burst()

    later = rig.published(repo_url)[2:]
    assert rig.metric("gitops_reverser_watcher_watch_restarts_total", reason="expired") == 1
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="expired") == 1
    assert "keep" not in [e.object_id.name for e in later], keep["metadata"]["uid"]
    deletes = [(e.object_id.name, e.uid) for e in later if e.operation == "DELETE"]
    assert deletes == ([("gone", gone["metadata"]["uid"])] if swept else [])


def test_relist_after_410_publishes_and_writes_nothing_for_unchanged_objects(
    short_rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    """M1, M3: a relist after ``410 Gone`` publishes only the object that changed while no
    watch ran, so the objects already in Git cost neither an event nor a write, and the one
    commit that follows holds the changed object alone."""
    rig = short_rig
    mirror_setup(rig, repo_url)
    for name in ("a", "b", "c"):
        rig.cluster.configmap("team-a", name, {"n": name})
    rig.burst()
    mirror_everything(rig, repo_url, tmp_path / "first")
    bare = githost.repo_path("team/config")
    mirrored = git("rev-parse", "main", cwd=bare)
    assert rig.events(repo_url) == []  # all acknowledged after the push

    rig.cluster.patch("v1", "ConfigMap", "c", "team-a", {"data": {"n": "sea"}})
    rig.cluster.configmap("default", "noise", {"i": "0"})
    for i in range(1, SMALL_HISTORY + 2):
        rig.cluster.patch("v1", "ConfigMap", "noise", "default", {"data": {"i": str(i)}})
    rig.burst()

    assert rig.metric("gitops_reverser_watcher_relists_total", cause="expired") == 1
    assert [(e.operation, e.object_id.name) for e in rig.events(repo_url)] == [("UPDATE", "c")]
    mirror_everything(rig, repo_url, tmp_path / "second")
    changed = git("diff", "--name-only", mirrored, "main", cwd=bare).split()
    assert changed == ["clusters/team-a/team-a/configmaps/c.yaml"]
    assert git("rev-list", "--count", f"{mirrored}..main", cwd=bare) == "1"


def test_expired_cursor_is_replaced_by_the_relist_version(short_rig: Rig, repo_url: str) -> None:
    """M1: after the relist the cursor is the list's resourceVersion, and the seen set is
    exactly the listed objects, so the next restart resumes instead of relisting again."""
    rig = short_rig
    uid = mirror_setup(rig, repo_url, prune={"mode": "Always"})
    rig.cluster.configmap("team-a", "keep", {"v": "1"})
    rig.cluster.configmap("team-a", "gone", {"v": "1"})
    rig.burst()
    cursor_key = rig.keys.watch_cursor(uid, "/configmaps", "team-a")
    expired = int(rig.redis.get(cursor_key) or 0)
    _expire_after_deleting(rig, "gone")
    rig.burst()

    cursor = int(rig.redis.get(cursor_key) or 0)
    assert cursor > expired + SMALL_HISTORY  # past the noise: the relist's own version
    known = rig.redis.hkeys(rig.keys.watch_known(uid, "/configmaps", "team-a"))
    assert sorted(known) == ["keep"]
    rig.burst()
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="expired") == 0


def test_config_is_published_and_forgotten_with_its_gittarget(rig: Rig, repo_url: str) -> None:
    """The watcher publishes BranchConfig and TargetConfig (with the applier reference the
    branch worker owes requests to) for a served GitTarget, and when the
    GitTarget is deleted forgets its config and cursors (ConfigStore.forget_target; S3)."""
    applier = {
        "kustomizationRef": {"name": "apps", "namespace": "flux-system"},
        "quietPeriod": "45s",
    }
    uid = mirror_setup(
        rig, repo_url, prune={"mode": "Always"}, onRefusal="Reapply", applier=applier
    )
    rig.cluster.configmap("team-a", "app", {"v": "1"})
    rig.burst()

    bk = Branch(repo_url, "main").key
    branch = rig.config.branch(bk)
    assert branch is not None
    assert (branch.url, branch.branch, branch.commit_window_s) == (repo_url, "main", 5.0)
    assert (branch.provider_namespace, branch.provider_name) == ("team-a", "repo")
    target = rig.config.target(uid)  # type: ignore[arg-type]
    assert target is not None
    assert (target.path, target.prune, target.on_refusal) == (
        "clusters/team-a",
        "Always",
        "Reapply",
    )
    assert target.applier == ApplierRef("Kustomization", "flux-system", "apps", "default")
    assert target.quiet_period_s == 45.0
    assert list(redis_client_keys(rig, f"watch:{uid}:*"))

    rig.cluster.delete("gitopsreverser.io/v1alpha1", "GitTarget", "target", "team-a")
    rig.burst()
    assert rig.config.target(uid) is None  # type: ignore[arg-type]
    assert not list(redis_client_keys(rig, f"watch:{uid}:*"))
    assert uid not in rig.redis.smembers(rig.keys.watcher_targets)


def redis_client_keys(rig: Rig, pattern: str) -> list[str]:
    return list(rig.redis.scan_iter(f"{rig.prefix}:{pattern}"))


def test_a_redis_that_came_back_empty_gets_every_config_again(rig: Rig, repo_url: str) -> None:
    """C8: the same watcher (no restart) publishes the branch and GitTarget configs again once
    its marker shows Redis lost them. Fails before C8: the pass compared against its memory."""
    uid = mirror_setup(rig, repo_url)
    bk = Branch(repo_url, "main").key
    watcher = rig.watcher()
    try:
        watcher.reconcile_once()
        assert rig.config.branch(bk) is not None
        rig.redis.delete(*rig.redis.scan_iter(f"{rig.prefix}:*"))  # Redis came back empty
        watcher.reconcile_once()
        assert rig.config.branch(bk) is not None, "the branch's settings are back"
        assert rig.config.target(GitTargetUid(uid)) is not None, "the GitTarget's config too"
        assert rig.config.without_targets([bk]) == set(), "registered with its branch"
    finally:
        watcher.close()
