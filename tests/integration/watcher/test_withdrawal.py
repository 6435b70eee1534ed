"""A GitTarget that becomes invalid has its published settings withdrawn, and a branch the
branch worker retired meanwhile is published again, with its GitTarget, once it is valid again
(``ConfigStore.publish_served``, ``withdraw_target``; ``WorkerRegistry.retire``)."""

from __future__ import annotations

import pytest

from shared.model.ids import Branch, GitTargetUid
from shared.store.leases import Leases
from shared.store.workers import WorkerRegistry
from tests.integration.watcher.harness import Rig, git_provider, mirror_setup

pytestmark = pytest.mark.integration


def test_an_invalid_target_is_withdrawn_and_served_again_with_its_branch(
    rig: Rig, repo_url: str
) -> None:
    uid = GitTargetUid(mirror_setup(rig, repo_url))
    rig.burst()
    bk = Branch(repo_url, "main").key
    assert rig.config.target(uid) is not None
    assert rig.config.has_targets(bk)

    rig.cluster.delete("gitopsreverser.io/v1alpha1", "GitProvider", "repo", "team-a")
    rig.burst()
    assert rig.cluster.conditions("GitTarget", "target", "team-a")["Validated"]["status"] == (
        "False"
    )
    assert rig.config.target(uid) is None, "withdrawn: the branch worker no longer writes for it"
    assert not rig.config.has_targets(bk)
    assert uid in rig.redis.smembers(rig.keys.watcher_targets), "still forgotten when deleted"

    # The branch's owner retires the branch, which no GitTarget writes to any more.
    lease = Leases(rig.redis, rig.keys, 60_000).acquire(bk, "owner")
    assert lease is not None
    assert WorkerRegistry(rig.redis, rig.keys).retire(lease)
    assert rig.config.branch(bk) is None

    rig.cluster.create(git_provider("team-a", repo_url))
    rig.burst()
    assert rig.config.target(uid) is not None, "served again"
    assert rig.config.branch(bk) is not None, "its branch is published again with it"
    assert rig.config.has_targets(bk)
