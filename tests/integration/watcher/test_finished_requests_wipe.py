"""N10 (the 2026-12-06 probe): a finished CommitRequest is never bound again, not even after
Redis comes back empty and forgot it.

The whole path runs for real: the sandbox's API server, a watcher, a private redis-server that
the test empties (``FLUSHALL``), a branch worker and a Git host. Two requests finish as the
branch worker finishes them (one binds to nothing, ``NoWindowInGrace``; one is committed);
then Redis loses everything and edits follow.

Before: the watcher saw no record of either request in Redis and published both again; the
branch worker bound them to the window of the new edits, whose commit took a request's message,
and both statuses flipped to ``Committed`` with that commit's sha.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from services.branch_worker.worker import BranchWorker, Stores
from shared.model.commit_requests import COMMITTED, NO_WINDOW, CommitRequestItem
from shared.model.ids import Branch
from shared.settings import Settings
from tests.integration.redis_server import RedisServer, redis_server
from tests.integration.watcher.harness import GROUP, Cluster, FakeClock, Rig, mirror_setup

pytestmark = pytest.mark.integration
__all__ = ["redis_server"]  # the fixture, imported for pytest

NS = "team-a"
UNBOUND = "Approved by security team"
BOUND = "save: the first edit"


def _request(name: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "CommitRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"targetRef": {"name": "target"}, "message": message, "closeDelaySeconds": 0},
    }


def _status(rig: Rig, name: str) -> dict[str, Any]:
    return dict(rig.cluster.get(GROUP, "CommitRequest", name, NS).get("status") or {})


def _reason(rig: Rig, name: str) -> str:
    conditions = {c["type"]: c for c in _status(rig, name).get("conditions", [])}
    return str(conditions.get("Ready", {}).get("reason", ""))


def _subjects(githost: GitHost) -> list[str]:
    bare = githost.repo_path("team/config")
    return git("log", "--format=%s", "main", cwd=bare).splitlines()


def _mirror_everything(rig: Rig, url: str, work: Path) -> None:
    """A branch worker takes the branch, reads every entry of its stream (each wake blocks on
    Redis or on the worker's pool, never on a timer), then pushes what is open as it shuts
    down."""
    settings = Settings(key_prefix=rig.prefix, work_dir=str(work))
    worker = BranchWorker(settings, Stores.build(rig.redis, settings), "w1", FakeClock())
    stream = rig.keys.branch_events(Branch(url, "main").key)

    def delivered() -> bool:  # entries acknowledged leave the stream: compare the ids
        if not rig.redis.exists(stream):
            return False
        groups = rig.redis.xinfo_groups(stream)
        last = rig.redis.xinfo_stream(stream)["last-generated-id"]
        return bool(groups) and groups[0]["last-delivered-id"] == last

    try:
        for _ in range(100):
            worker.wake()
            worker.settle()
            if delivered():
                break
        else:
            raise AssertionError("the branch worker did not read its stream")
    finally:
        worker.shutdown()


def _requests_published(rig: Rig) -> list[str]:
    return [item.name for _, item in rig.log if isinstance(item, CommitRequestItem)]


def test_finished_requests_are_not_bound_again_after_redis_comes_back_empty(
    cluster: Cluster,
    redis_server: RedisServer,
    *,
    githost: GitHost,
    repo_url: str,
    tmp_path: Path,
) -> None:
    rig = Rig(cluster, redis_server.client(), "n10")
    mirror_setup(rig, repo_url, ns=NS)
    rig.cluster.create(_request("unbound", UNBOUND))  # no edit yet: no window to bind to
    rig.burst()
    _mirror_everything(rig, repo_url, tmp_path / "first")
    rig.cluster.configmap(NS, "first", {"v": "1"})
    rig.burst()  # the edit's window opens first ...
    rig.cluster.create(_request("bound", BOUND))
    rig.burst()  # ... and the request binds to it
    _mirror_everything(rig, repo_url, tmp_path / "second")
    rig.watcher().sync_commit_requests()
    assert (_reason(rig, "unbound"), _reason(rig, "bound")) == (NO_WINDOW, COMMITTED)
    assert _subjects(githost)[0] == BOUND
    finished = {name: _status(rig, name) for name in ("unbound", "bound")}
    published = len(_requests_published(rig))

    rig.redis.flushall()  # Redis wiped or replaced: no outcome, no "published" mark
    rig.cluster.configmap(NS, "later", {"v": "2"})
    rig.cluster.patch("v1", "ConfigMap", "first", NS, {"data": {"v": "3"}})
    rig.clock.now += 60
    rig.burst()
    rig.watcher().sync_commit_requests()
    _mirror_everything(rig, repo_url, tmp_path / "third")
    rig.watcher().sync_commit_requests()

    subjects = _subjects(githost)
    assert subjects[0] not in (UNBOUND, BOUND), subjects
    assert subjects[1] == BOUND, "the edits after the wipe are a commit of their own"
    assert _requests_published(rig)[published:] == []
    assert {name: _status(rig, name) for name in finished} == finished
