"""A branch loop wired to real Redis and a real bare repository, with a hand-driven clock."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from sandbox.githost.outside import git, push
from services.branch_worker.applied import AppliedReader
from services.branch_worker.apply_window import Admission
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.branch import BranchLoop
from services.branch_worker.commit_requests import Requests
from services.branch_worker.signing import Signer, unsigned
from services.branch_worker.waits import Attribution
from services.branch_worker.worktree import TreeFactory, WorkTree
from shared.git.remote import ls_remote
from shared.git.workspace import Workspace
from shared.model.config import BranchConfig, TargetConfig
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent, Operation
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.notices import PushNotice
from shared.settings import Settings
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.ledger import Ledger
from shared.store.streams import EventStream
from tests.configs import branch_config, target_config
from tests.fixtures import process_env
from tests.integration.branch_worker.doubles import (
    AdmitEverything,
    NoAttribution,
    NoRequests,
)
from tests.integration.branch_worker.site import Gates, Site, settings_for


@dataclass
class Clock:
    now: float = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    """Everything a branch-loop test needs."""

    tmp: Path
    bare: Path
    client: redis.Redis
    keys: Keys
    clock: Clock
    branch: BranchConfig
    target: TargetConfig
    #: The process settings the loop is built with (the defaults unless a test says otherwise).
    settings: Settings = field(default_factory=Settings)
    events: EventStream = field(init=False)
    configs: ConfigStore = field(init=False)
    states: BranchStates = field(init=False)
    appliers: ApplierStore = field(init=False)
    attempts: Attempts = field(init=False)

    def __post_init__(self) -> None:
        self.events = EventStream(self.client, self.keys)
        self.configs = ConfigStore(self.client, self.keys)
        self.states = BranchStates(self.client, self.keys)
        self.appliers = ApplierStore(self.client, self.keys)
        self.attempts = Attempts(self.client, self.keys, f"{self.keys.prefix}-attempts")
        self.configs.publish_branch(self.branch)
        self.configs.publish_target(self.target)

    @property
    def bk(self) -> Any:
        return self.branch.ref.key

    def loop(
        self,
        worker: str = "w1",
        read_tip: Callable[[], str | None] | None = None,
        signer: Signer = unsigned,
        requests: Requests | None = None,
        trees: TreeFactory = WorkTree,
        *,
        applied: AppliedReader | None = None,
        guard: Admission | None = None,
        attributor: Attribution | None = None,
        delivered_at: Callable[[], float | None] = lambda: None,
        trust_max_age: float = 0.0,
    ) -> BranchLoop:
        """A started loop. ``applied``: what its appliers last applied, read at the branch's
        very first start (issue 23); by default they hold the tip (an install at the tip).
        Without ``requests``, ``guard`` or ``attributor`` the loop is built with a stand-in
        (``doubles``): no CommitRequest binds, no apply window, attribution off. ``trees``
        builds its work tree (the benchmarks' plain writer: ``bench.plain.PlainTree``)."""
        lease = Leases(self.client, self.keys, 60_000).acquire(self.bk, worker)
        assert lease is not None
        ws = Workspace(self.tmp / f"ws-{worker}-{lease.token}", self.branch.url, "main")
        loop = BranchLoop(
            lease,
            self.branch,
            trees(ws),
            events=self.events,
            states=self.states,
            configs=self.configs,
            clock=self.clock,
            worker_id=worker,
            read_tip=read_tip or (lambda: ls_remote(str(self.bare), "main")),
            steady_tick=self.settings.steady_tick.total_seconds(),
            max_window=self.settings.max_window.total_seconds(),
            signer=signer,
            requests=requests or NoRequests(),
            guard=guard or AdmitEverything(),
            attributor=attributor or NoAttribution(),
            applied=applied or (lambda _ref, _namespaces: self.head()),
            delivered_at=delivered_at,
            trust_max_age=trust_max_age,
            desk=ApplierDesk(
                self.bk,
                self.branch,
                configs=self.configs,
                appliers=self.appliers,
                attempts=self.attempts,
                states=self.states,
                clock=self.clock,
                attempt_deadline_s=self.settings.attempt_deadline.total_seconds(),
                ledger=Ledger(self.client, self.keys),
            ),
        )
        loop.start()
        return loop

    def publish(
        self,
        name: str,
        op: Operation = "UPDATE",
        data: dict[str, str] | None = None,
        kind: str = "ConfigMap",
        sensitive: bool = False,
    ) -> None:
        self.events.publish(self.bk, self.event(name, op, data, kind, sensitive))

    def event(
        self,
        name: str,
        op: Operation = "UPDATE",
        data: dict[str, str] | None = None,
        kind: str = "ConfigMap",
        sensitive: bool = False,
    ) -> ObjectEvent:
        """The event ``publish`` publishes."""
        resource = kind.lower() + "s"
        body = (
            None
            if op == "DELETE"
            else {
                "apiVersion": "v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": "team"},
                **({} if sensitive else {"data": data or {"k": "v"}}),
            }
        )
        return ObjectEvent(
            target=GitTargetRef(self.target.uid, "team", "gt"),
            operation=op,
            object_id=ObjectId("", "v1", resource, kind, "team", name),
            uid=f"uid-{name}",
            resource_version="1",
            body=body,
            managers=(ManagerEntry("kubectl-edit", "Update", "2026-11-29T10:00:00Z"),),
            observed_at=self.clock.now,
            sensitive=sensitive,
        )

    def drain(self, loop: BranchLoop, worker: str = "w1") -> None:
        loop.handle(self.events.read(self.bk, worker, 1000, None))

    def foreign_push(self, name: str = "notes.md") -> str:
        """Someone else pushes a commit to the branch; returns its sha."""
        other = self.tmp / f"other-{name}"
        return push(str(self.bare), other, {name: "someone else\n"}, f"foreign {name}")

    def notice(self, after: str) -> PushNotice:
        return PushNotice(
            "team/gp", str(self.bare), "refs/heads/main", after, "d-1", self.clock.now
        )

    def head(self) -> str:
        return git("rev-parse", "main", cwd=self.bare).strip()

    def commits(self) -> list[str]:
        return git("log", "--format=%s", "main", cwd=self.bare).splitlines()

    def show(self, path: str) -> str:
        return git("show", f"main:{path}", cwd=self.bare)

    def files(self) -> list[str]:
        return git("ls-tree", "-r", "--name-only", "main", cwd=self.bare).split()

    def inspect(self) -> str:
        """What ``inspect`` (python -m services.branch_worker inspect) prints of this rig's
        keys on the test Redis."""
        done = subprocess.run(
            [sys.executable, "-m", "services.branch_worker", "inspect"],
            env=process_env(self.keys.prefix),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout


@pytest.fixture
def rig(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Iterator[Rig]:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    push(str(bare), tmp_path / "seed", {"README.md": "seed\n"}, "seed")
    branch = branch_config(str(bare), "main", "team", "gp", commit_window_s=5.0)
    target = target_config(GitTargetUid("gt-uid-1"), "team", "gt", str(bare), "main", path="apps")
    yield Rig(tmp_path, bare, redis_client, Keys(key_prefix), Clock(), branch, target)


@pytest.fixture
def site(tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Site:
    return Site(tmp_path, redis_client, key_prefix, settings_for(tmp_path, key_prefix))


@pytest.fixture
def gates() -> Iterator[Gates]:
    found = Gates()
    yield found
    found.release.set()  # never leave a pool thread waiting behind a failed test
