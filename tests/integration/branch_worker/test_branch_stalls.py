"""T4: a branch that cannot push or start is recorded as stalled, for its GitTargets' status.

The remote is a real bare repository whose ``pre-receive`` hook declines every push (as a
host's branch protection does); removing the hook fixes it. Also: a remote that does not
exist stalls the branch at its start. The records are read back from real Redis with
``BranchHealth``, as the watcher reads them each pass.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
import redis

from services.branch_worker.worker import RETAKE_PAUSE_S, BranchWorker, Stores
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from tests.configs import branch_config, target_config
from tests.integration.branch_worker.conftest import Clock

pytestmark = pytest.mark.integration

DECLINE = "#!/bin/sh\necho 'pushes to main are closed' >&2\nexit 1\n"


def one_event_site(
    tmp_path: Path, client: redis.Redis, prefix: str, bare: Path
) -> tuple[Stores, BranchKey, Settings]:
    settings = Settings(
        redis_url=Settings.from_env().redis_url, key_prefix=prefix, work_dir=str(tmp_path / "w")
    )
    stores = Stores.build(client, settings)
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
    return stores, bk, settings


def _passes(worker: BranchWorker) -> None:
    """Take the branch if it is not taken, then run one pass over it."""
    for _ in range(2):
        worker.wake()
        worker.settle()


def test_a_remote_that_refuses_pushes_stalls_the_branch_until_it_accepts(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    bare = tmp_path / "protected.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    for args in (
        ["clone", "-q", str(bare), str(seed)],
        [
            "-C",
            str(seed),
            "-c",
            "user.name=s",
            "-c",
            "user.email=s@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "seed",
        ],
        ["-C", str(seed), "push", "-q", "origin", "HEAD:main"],
    ):
        subprocess.run(["git", *args], check=True, capture_output=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(DECLINE)
    hook.chmod(0o755)
    stores, bk, settings = one_event_site(tmp_path, redis_client, key_prefix, bare)
    clock = Clock()
    worker = BranchWorker(settings, stores, "w", clock)
    _passes(worker)
    stall = stores.health.stalls()[bk]
    assert stall.reason == "PushFailing" and stall.since == clock.now
    assert "declined" in stall.message, stall.message
    clock.now += 60.0
    _passes(worker)  # still refused: since stays the first failure
    assert stores.health.stalls()[bk].since == 1_000.0
    hook.unlink()
    clock.now += settings.steady_tick.total_seconds()  # the next pass is due
    _passes(worker)
    assert stores.health.stalls() == {}, "a push that lands clears the stall"
    log = subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout
    assert log.splitlines() == ["[CREATE] v1/configmaps/a", "seed"]


def test_a_branch_that_cannot_start_is_stalled_and_cleared_once_it_runs(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    bare = tmp_path / "later.git"  # does not exist yet
    stores, bk, settings = one_event_site(tmp_path, redis_client, key_prefix, bare)
    clock = Clock()
    worker = BranchWorker(settings, stores, "w", clock)
    worker.wake()
    worker.settle()
    assert stores.health.stalls()[bk].reason == "BranchStalled"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    clock.now += RETAKE_PAUSE_S
    worker.run(threading.Event(), burst=True)
    assert stores.health.stalls() == {}


def test_a_refused_first_push_to_an_empty_remote_lands_after_a_restart_once_it_accepts(
    tmp_path: Path, redis_client: redis.Redis, key_prefix: str
) -> None:
    """A remote with no commits at all refuses the branch's first push: the pass replays from
    nothing, a new worker takes the branch over the same work tree, and once the remote
    accepts, the write lands as the branch's only commit. Failed before the fix: the replay
    (and the restart) died on ``git checkout --orphan gr-main``: "a branch named 'gr-main'
    already exists", so the branch was stalled for ever with a git error, not the remote's."""
    bare = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(DECLINE)
    hook.chmod(0o755)
    stores, bk, settings = one_event_site(tmp_path, redis_client, key_prefix, bare)
    clock = Clock()
    first = BranchWorker(settings, stores, "w1", clock)
    _passes(first)
    stall = stores.health.stalls()[bk]
    assert stall.reason == "PushFailing" and "declined" in stall.message, stall.message
    first.shutdown()
    second = BranchWorker(settings, stores, "w2", clock)  # a restart: the work tree is kept
    try:
        _passes(second)
        assert "declined" in stores.health.stalls()[bk].message
        hook.unlink()
        clock.now += settings.steady_tick.total_seconds()
        _passes(second)
        assert stores.health.stalls() == {}, "a push that lands clears the stall"
    finally:
        second.shutdown()
    log = subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout
    assert log.splitlines() == ["[CREATE] v1/configmaps/a"]


def test_a_branch_that_keeps_failing_to_start_logs_one_error_then_counts(
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 26 §5: retaken and failing again and again, the branch is logged once as an ERROR
    with the traceback; then one WARNING a minute with the count; an INFO once it works."""
    import logging

    from services.branch_worker.worker import retake_pause

    bare = tmp_path / "later.git"  # does not exist yet
    stores, bk, settings = one_event_site(tmp_path, redis_client, key_prefix, bare)
    clock = Clock()
    worker = BranchWorker(settings, stores, "w", clock)
    caplog.set_level(logging.INFO, "services.branch_worker")
    for failure in range(1, 6):  # starts at 0, 5, 15, 35 and 75 s: the warning falls due at 75
        worker.wake()
        worker.settle()
        clock.now += retake_pause(failure)
    mine = [r for r in caplog.records if getattr(r, "branch", None) == bk]
    errors = [r for r in mine if r.levelno == logging.ERROR]
    warnings = [r for r in mine if r.levelno == logging.WARNING]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "cannot start" in errors[0].getMessage()
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "in a row" in warnings[0].getMessage()

    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    worker.run(threading.Event(), burst=True)
    infos = [r for r in caplog.records if r.getMessage().startswith(f"branch {bk} works again")]
    assert len(infos) == 1
