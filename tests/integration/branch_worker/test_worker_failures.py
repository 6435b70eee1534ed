"""A branch whose remote fails is given back and retried; the worker process keeps running."""

from __future__ import annotations

import itertools
import subprocess
import threading
from pathlib import Path

import pytest
import redis

from services.branch_worker.taking import ACQUIRE_EVERY_S
from services.branch_worker.worker import (
    MAX_RETAKE_PAUSE_S,
    RETAKE_PAUSE_S,
    BranchWorker,
    retake_pause,
)
from shared.git.workspace import PushResult, Workspace
from tests.integration.branch_worker.conftest import Clock
from tests.integration.branch_worker.site import Site, settings_for
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


class _Exploding(Workspace):
    """A real work tree whose push raises what no job expects, for the repository ``bad``."""

    def push(self, expected: str | None) -> PushResult:
        if Path(self.url).name == "bad.git":
            raise RuntimeError("an error nobody foresaw")
        return super().push(expected)


def _round(worker: BranchWorker, clock: Clock) -> None:
    clock.now += ACQUIRE_EVERY_S  # the scheduler looks for branches to take again
    worker.wake()
    worker.settle()


def test_an_unexpected_error_fails_its_branch_only_and_its_retake_pause_grows(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """T4: an error no job expected (N1's ``re2.Error``, say) ended ``run`` and so the process,
    for every branch; now it fails its own branch: the stall is recorded, the branch is given
    back and taken again after a pause that doubles while it keeps failing, and the other
    branch is written meanwhile."""
    settings = settings_for(tmp_path, key_prefix)
    site = Site(tmp_path, redis_client, key_prefix, settings)
    bad, good = site.branch("bad"), site.branch("good")
    site.edit("bad", "a")
    site.edit("good", "a")
    clock = Clock()
    worker = BranchWorker(settings, site.stores, "w", clock, workspaces=_Exploding)
    _round(worker, clock)  # both started
    _round(worker, clock)  # both passed: bad's push raised
    assert site.pushed("good") == ["[CREATE] v1/configmaps/a"]
    stall = site.stores.health.stalls()[bad]
    assert stall.reason == "BranchStalled"
    assert stall.message == "RuntimeError: an error nobody foresaw"
    assert bad not in worker.loops and good in worker.loops
    assert site.stores.leases.holder(bad) is None, "given back"
    taken_at = []
    for _ in range(40):  # 40 s of the scheduler's clock
        _round(worker, clock)
        if bad in worker.loops:
            taken_at.append(clock.now)
    assert len(taken_at) >= 2
    gaps = [b - a for a, b in itertools.pairwise(taken_at)]
    assert gaps == sorted(gaps) and gaps[-1] > gaps[0], f"the pause grows: {gaps}"
    assert retake_pause(1) == RETAKE_PAUSE_S and retake_pause(9) == MAX_RETAKE_PAUSE_S
    site.edit("good", "b")
    _round(worker, clock)
    assert site.pushed("good")[0] == "[CREATE] v1/configmaps/b", "the good branch goes on"
