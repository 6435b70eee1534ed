"""Workers over real Redis and real bare repositories, for the worker-level tests: branches
published as the watcher would, edits, pushes held up by a gate the test controls, and a
worker's ``run`` on a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from sandbox.githost.outside import git
from services.branch_worker.worker import BranchWorker, Stores
from shared.git.workspace import PushResult, Workspace
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.settings import Settings
from tests.configs import branch_config, target_config

#: Bound of every cross-thread wait here; generous, since the machine may be loaded.
DEADLINE_S = 30.0


@dataclass
class Gates:
    """Holds up the pushes of chosen repositories until the test lets them go."""

    held: set[str] = field(default_factory=set)  # bare repository names whose pushes wait
    release: threading.Event = field(default_factory=threading.Event)
    entered: list[str] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def workspace(self, directory: Path, url: str, branch: str, env: dict[str, str]) -> Workspace:
        return GatedWorkspace(self, directory, url, branch, env=env)


class GatedWorkspace(Workspace):
    """A real work tree whose push waits on the test's gate first (a slow remote)."""

    def __init__(
        self, gates: Gates, directory: Path, url: str, branch: str, env: dict[str, str]
    ) -> None:
        self._gates = gates
        super().__init__(directory, url, branch, env=env)

    def push(self, expected: str | None) -> PushResult:
        gates, name = self._gates, Path(self.url).name
        with gates.lock:
            gates.entered.append(name)
            gates.active += 1
            gates.peak = max(gates.peak, gates.active)
        try:
            if name in gates.held:
                assert gates.release.wait(DEADLINE_S), "the test never released the push"
            return super().push(expected)
        finally:
            with gates.lock:
                gates.active -= 1


@dataclass
class Site:
    """Bare repositories, their published branches, and workers over one Redis prefix."""

    tmp: Path
    client: redis.Redis
    prefix: str
    settings: Settings
    stores: Stores = field(init=False)
    repos: dict[str, tuple[BranchKey, GitTargetUid]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.stores = Stores.build(self.client, self.settings)

    def branch(self, name: str) -> BranchKey:
        bare = self.tmp / f"{name}.git"
        git("init", "-q", "--bare", "-b", "main", str(bare))
        return self.publish(name)

    def publish(self, name: str) -> BranchKey:
        """Publish the branch and its GitTarget, as the watcher does (again after a wipe)."""
        url = str(self.tmp / f"{name}.git")
        uid = GitTargetUid(f"gt-{name}")
        bk = self.stores.configs.publish_served(
            branch_config(url, "main", "team", f"gp-{name}", commit_window_s=0.0),
            [target_config(uid, "team", "gt", url, "main", path="apps")],
        )
        self.repos[name] = (bk, uid)
        return bk

    def edit(self, name: str, object_name: str) -> None:
        bk, uid = self.repos[name]
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": object_name, "namespace": "team"},
            "data": {"k": object_name},
        }
        event = ObjectEvent(
            GitTargetRef(uid, "team", "gt"),
            "CREATE",
            ObjectId("", "v1", "configmaps", "ConfigMap", "team", object_name),
            f"uid-{object_name}",
            "1",
            body,
            (),
            0.0,
        )
        self.stores.events.publish(bk, event)

    def pushed(self, name: str) -> list[str]:
        bare = self.tmp / f"{name}.git"
        if not git("for-each-ref", "refs/heads/main", cwd=bare).strip():
            return []
        return git("log", "--format=%s", "main", cwd=bare).splitlines()

    def worker(
        self, worker_id: str, clock: Callable[[], float], gates: Gates | None = None
    ) -> BranchWorker:
        if gates is None:
            return BranchWorker(self.settings, self.stores, worker_id, clock)
        return BranchWorker(
            self.settings, self.stores, worker_id, clock, workspaces=gates.workspace
        )


def settings_for(tmp: Path, prefix: str, **changes: Any) -> Settings:
    base = Settings(
        redis_url=Settings.from_env().redis_url, key_prefix=prefix, work_dir=str(tmp / "work")
    )
    return replace(base, **changes)


@dataclass
class Running:
    """A worker's ``run`` on a thread of its own, stopped (and joined) by the test."""

    worker: BranchWorker
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def __enter__(self) -> BranchWorker:
        self.thread = threading.Thread(target=self.worker.run, args=(self.stop,), daemon=True)
        self.thread.start()
        return self.worker

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), "the worker stopped"
