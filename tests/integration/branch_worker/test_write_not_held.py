"""A commit that does not hold its writes is shown on the GitTarget, read through the API (D1).

Issue 11 (D1's last defence): ``Workspace.commit`` checks with one ``ls-tree`` that the commit
holds every write made for it and raises ``WriteNotHeld`` when it does not. Before, that only
failed the branch's pass (a stall logged as PushFailing): the GitTarget showed nothing of it.
Now the branch worker records it as the GitTarget's ``GitPathAccepted=False WriteNotHeld``, the
watcher writes it to the GitTarget's conditions, and the next commit that holds the folder's
writes lifts it. Nothing is acknowledged meanwhile (M8).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from sandbox.githost import GitHost
from shared.git.errors import WriteNotHeld
from shared.git.remote import ls_remote
from shared.model.ids import Branch, GitTargetUid
from shared.store.keys import Keys
from shared.store.leases import Leases
from tests.integration.branch_worker.conftest import Clock, Rig
from tests.integration.watcher.harness import Rig as WatcherRig
from tests.integration.watcher.harness import mirror_setup, sandbox_cluster

pytestmark = pytest.mark.integration

NS = "team-a"


@dataclass
class Both:
    """The watcher against the sandbox API, and a branch loop on what it published."""

    watcher: WatcherRig
    branch: Rig
    url: str
    uid: GitTargetUid

    def conditions(self) -> dict[str, dict[str, str]]:
        """The GitTarget's conditions as ``kubectl get gittarget -o yaml`` shows them."""
        self.watcher.burst()
        return self.watcher.cluster.conditions("GitTarget", "target", NS)


@pytest.fixture
def both(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[Both]:
    host = GitHost(tmp_path / "git")
    host.start()
    host.create_repo("team/config", files={"README.md": b"hello\n"})
    url = host.repo_url("team/config")
    with sandbox_cluster(tmp_path / "kube") as cluster:
        watcher = WatcherRig(cluster, redis_client, key_prefix)
        uid = GitTargetUid(mirror_setup(watcher, url, ns=NS))
        watcher.burst()
        configs = watcher.config
        branch, target = configs.branch(Branch(url, "main").key), configs.target(uid)
        assert branch is not None and target is not None, "the watcher published the GitTarget"
        bare = host.repo_path("team/config")
        rig = Rig(tmp_path, bare, redis_client, Keys(key_prefix), Clock(), branch, target)
        yield Both(watcher, rig, url, uid)
    host.stop()


def test_a_commit_that_does_not_hold_its_write_shows_on_the_gittarget(both: Both) -> None:
    """D1, M8, M10: a file changed under the worker between its write and the commit (the
    commit then holds other bytes than were written) is WriteNotHeld: nothing pushed, nothing
    acknowledged, ``GitPathAccepted=False WriteNotHeld`` (and Stalled) on the GitTarget.
    The branch starting over writes it again; the refusal lifts and the condition is True."""
    rig = both.branch
    assert both.conditions()["GitPathAccepted"]["status"] == "True"
    before = rig.head()
    loop = rig.loop(read_tip=lambda: ls_remote(both.url, "main"))
    rig.publish("app", "CREATE", data={"v": "1"})
    rig.drain(loop)
    written = [p for p in loop.ws.directory.rglob("app.yaml") if ".git" not in p.parts]
    assert len(written) == 1, "the write is in the work tree"
    written[0].write_text("tampered: true\n")  # the bytes the commit will hold are not ours
    rig.clock.now += 10
    with pytest.raises(WriteNotHeld):
        loop.flush()

    assert rig.head() == before, "nothing pushed"
    assert rig.events.pending_count(rig.bk) == 1, "nothing acknowledged"
    refusal = rig.configs.refusal(both.uid)
    assert refusal is not None and refusal["reason"] == "WriteNotHeld"
    assert rig.configs.refusing([both.uid]) == set(), "no Refusal is owed for it (A5)"
    shown = both.conditions()
    accepted = shown["GitPathAccepted"]
    assert (accepted["status"], accepted["reason"]) == ("False", "WriteNotHeld")
    assert "app.yaml" in accepted["message"]
    assert shown["Stalled"]["status"] == "True"

    # the worker gives the branch back; the next owner claims the event and writes it again
    leases = Leases(rig.client, rig.keys, 60_000)
    leases.release(loop.lease)
    again = rig.loop("w2", read_tip=lambda: ls_remote(both.url, "main"))
    again.handle(rig.events.claim_pending(rig.bk, "w2"))
    rig.clock.now += 10
    again.flush()
    assert rig.head() != before
    assert rig.events.pending_count(rig.bk) == 0
    assert rig.configs.refusal(both.uid) is None
    path = next(p for p in rig.files() if p.endswith("/app.yaml"))
    content = rig.show(path)
    assert "tampered" not in content and "v:" in content, content
    assert both.conditions()["GitPathAccepted"]["status"] == "True"
