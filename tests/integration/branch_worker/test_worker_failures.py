"""A branch whose remote fails is given back and retried; the worker process keeps running."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
import redis

from services.branch_worker.worker import RETAKE_PAUSE_S, BranchWorker, Stores
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from shared.settings import Settings
from tests.configs import branch_config, target_config
from tests.integration.branch_worker.conftest import Clock

pytestmark = pytest.mark.integration


def test_an_unreachable_remote_is_given_back_then_taken_when_it_answers(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    settings = Settings(
        redis_url=Settings.from_env().redis_url,
        key_prefix=key_prefix,
        work_dir=str(tmp_path / "work"),
    )
    stores = Stores.build(redis_client, settings)
    bare = tmp_path / "later.git"  # does not exist yet
    bk = stores.configs.publish_branch(
        branch_config(str(bare), "main", "ns", "gp", commit_window_s=0.0)
    )
    uid = GitTargetUid("t")
    stores.configs.publish_target(target_config(uid, "ns", "gt", str(bare), "main", path="apps"))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    stores.events.publish(
        bk,
        ObjectEvent(
            GitTargetRef(uid, "ns", "gt"),
            "CREATE",
            ObjectId("", "v1", "configmaps", "ConfigMap", "ns", "a"),
            "u",
            "1",
            body,
            (),
            0.0,
        ),
    )
    clock = Clock()
    worker = BranchWorker(settings, stores, "w", clock)
    worker.wake()
    worker.settle()  # the start runs on the pool; act on how it ended
    assert bk not in worker.loops, "the failed start gave the branch back"
    assert stores.leases.holder(bk) is None
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    worker.wake()
    worker.settle()
    assert bk not in worker.loops, "not retaken during the pause"
    clock.now += RETAKE_PAUSE_S
    worker.wake()
    worker.settle()
    assert bk in worker.loops
    worker.run(threading.Event(), burst=True)
    log = subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout
    assert log.splitlines() == ["CREATE ConfigMap ns/a"], "the event waited and was not lost"
