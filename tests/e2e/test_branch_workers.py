"""Two branch-worker processes share twenty branches; one is killed mid-window (Q1, M8).

Processes are started as a user starts them (``python -m services.branch_worker``); object
events and branch settings are published into Redis as the watcher would publish them.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sandbox.githost.outside import git
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.streams import EventStream
from tests.configs import branch_config, target_config
from tests.fixtures import process_env
from tests.helpers import wait_until

pytestmark = pytest.mark.e2e

BRANCHES = 20
EDITS_BEFORE, EDITS_AFTER = 3, 3


def _event(uid: GitTargetUid, name: str) -> ObjectEvent:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "team"},
        "data": {"name": name},
    }
    return ObjectEvent(
        GitTargetRef(uid, "team", "gt"),
        "CREATE",
        ObjectId("", "v1", "configmaps", "ConfigMap", "team", name),
        f"uid-{name}",
        "1",
        body,
        (),
        0.0,
    )


@pytest.fixture
def worker_env(tmp_path: Path, key_prefix: str) -> dict[str, str]:
    return process_env(key_prefix, lease_period="2s", work_dir=str(tmp_path / "work"))


@pytest.fixture
def workers(worker_env: dict[str, str]) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "services.branch_worker", "--id", name], env=worker_env
        )
        for name in ("alpha", "beta")
    }
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)


def test_kill_9_in_open_windows_loses_nothing_and_writes_once(
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
    workers: dict[str, subprocess.Popen[bytes]],
) -> None:
    keys = Keys(key_prefix)
    configs, events = ConfigStore(redis_client, keys), EventStream(redis_client, keys)
    states, leases = BranchStates(redis_client, keys), Leases(redis_client, keys, 2000)
    repos: dict[BranchKey, tuple[Path, GitTargetUid]] = {}
    for i in range(BRANCHES):
        bare = tmp_path / f"r{i:02d}.git"
        git("init", "-q", "--bare", "-b", "main", str(bare))
        bk = configs.publish_branch(
            branch_config(str(bare), "main", "team", f"gp{i}", commit_window_s=1.0)
        )
        uid = GitTargetUid(f"gt-{i}")
        configs.publish_target(target_config(uid, "team", "gt", str(bare), "main", path="apps"))
        repos[bk] = (bare, uid)

    def publish(round_: str, count: int) -> None:
        for bk, (_, uid) in repos.items():
            for j in range(count):
                events.publish(bk, _event(uid, f"{round_}-{j}"))

    def holders() -> set[str]:
        return {(leases.holder(bk) or "|").split("|")[0] for bk in repos}

    publish("before", EDITS_BEFORE)
    wait_until(lambda: holders() == {"alpha", "beta"}, 30, "both workers to own branches")
    alpha_branches = [bk for bk in repos if (leases.holder(bk) or "").startswith("alpha|")]
    publish("after", EDITS_AFTER)
    wait_until(
        lambda: any(states.read(bk).windows_open for bk in alpha_branches),
        10,
        "alpha to have open windows",
    )
    workers["alpha"].send_signal(signal.SIGKILL)
    workers["alpha"].wait(timeout=10)

    def all_published() -> bool:
        return all(events.pending_count(bk) == 0 for bk in repos)

    wait_until(all_published, 60, "every edit to be pushed and acknowledged")
    assert holders() == {"beta"}
    for bare, _ in repos.values():
        listed = git("ls-tree", "-r", "--name-only", "main", cwd=bare).split()
        files = [path for path in listed if path.endswith(".yaml")]  # not the bootstrap files
        assert len(files) == EDITS_BEFORE + EDITS_AFTER
        for path in files:
            creating = git("log", "--format=%H", "main", "--", path, cwd=bare).split()
            assert len(creating) == 1, f"{bare.name}:{path} written {len(creating)} times"
