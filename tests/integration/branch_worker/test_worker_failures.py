"""A branch whose remote fails is given back and retried; the worker process keeps running."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
import redis

from services.branch_worker.worker import RETAKE_PAUSE_S, BranchWorker
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.test_branch_stalls import one_event_site

pytestmark = pytest.mark.integration


def test_an_unreachable_remote_is_given_back_then_taken_when_it_answers(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    bare = tmp_path / "later.git"  # does not exist yet
    stores, bk, settings = one_event_site(tmp_path, redis_client, key_prefix, bare)
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
    assert log.splitlines() == ["[CREATE] v1/configmaps/a"], "the event waited and was not lost"
