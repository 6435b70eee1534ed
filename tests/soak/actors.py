"""The soak's three actors, each a thread with its own seeded random choices.

- ``Editor``: API edits through the official client: ConfigMaps created, updated and deleted
  in every tenant's namespace, each write carrying a value no other write carries
  (``data.edit = <seed>-<n>``), so where it lands in Git can be counted.
- ``Outsider``: someone else pushes a file outside the GitTargets' folders now and then (a
  foreign commit Flux must be asked to apply); the Git host sends its webhook on every push.
- ``Chaos``: kills one product process (its whole session) or Redis with SIGKILL at random,
  leaves it down a little, starts it again, as a kubelet would.

Each actor draws from ``random.Random(f"{seed}:{name}")``, so a seed replays the same sequence
of choices (the threads' interleaving is the machine's). Their pauses are load pacing, not
synchronisation: nothing waits on them for a result.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client

from sandbox.githost.outside import OutsideClone
from tests.e2e.conftest import ApplierTenant, kill_process, start_process
from tests.e2e.system import ALL, System
from tests.integration.redis_server import RedisServer

#: A tenant keeps between these many ConfigMaps (created, updated, deleted at random).
MIN_OBJECTS, MAX_OBJECTS = 3, 12
#: Seconds between two API edits, two outside pushes, two kills (uniform in each range).
EDIT_GAP_S = (0.1, 0.6)
PUSH_GAP_S = (4.0, 12.0)
KILL_GAP_S = (3.0, 9.0)
#: Seconds a killed process, and Redis, stay down before they are started again.
PROCESS_DOWN_S = (0.0, 3.0)
REDIS_DOWN_S = (0.5, 5.0)
#: What may be killed: every process of the Procfile, and Redis.
VICTIMS = (*ALL, "redis")
#: Tries of one outside push that loses the race with the product's own push.
PUSH_TRIES = 6


@dataclass
class Actor:
    """A thread that acts until ``stop`` is set; exceptions are kept in ``errors``."""

    name: str
    seed: int
    stop: threading.Event
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.seed}:{self.name}")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.errors.append(f"{self.name} did not finish within {timeout}s")

    def pace(self, bounds: tuple[float, float]) -> bool:
        """Wait a random time within ``bounds`` (load pacing); False once asked to stop."""
        return not self.stop.wait(self.rng.uniform(*bounds))

    def act(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            self.act()
        except Exception as err:  # reported by the soak as a failure of the actor
            self.errors.append(f"{self.name}: {type(err).__name__}: {err}")


@dataclass
class Editor(Actor):
    """API edits of ConfigMaps; ``final`` is what each object should end as (None: deleted)."""

    tenants: list[ApplierTenant] = field(default_factory=list)
    api: client.CoreV1Api | None = None
    count: int = 0
    kinds: dict[str, int] = field(default_factory=lambda: {"create": 0, "update": 0, "delete": 0})
    values: list[str] = field(default_factory=list)
    final: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: (time.time(), kind, namespace, name, value) of every edit, for a failure's timeline
    history: list[tuple[float, str, str, str, str | None]] = field(default_factory=list)

    def act(self) -> None:
        while self.pace(EDIT_GAP_S):
            self.edit_once()

    @staticmethod
    def _body(meta: client.V1ObjectMeta, value: str) -> client.V1ConfigMap:
        return client.V1ConfigMap(metadata=meta, data={"edit": value})

    def edit_once(self) -> None:
        assert self.api is not None
        ns = self.rng.choice(self.tenants).ns
        alive = sorted(name for (n, name), v in self.final.items() if n == ns and v is not None)
        roll = self.rng.random()
        if len(alive) < MIN_OBJECTS or (roll < 0.3 and len(alive) < MAX_OBJECTS):
            kind, name = "create", f"cm-{self.count:05d}"
        else:
            kind, name = ("delete" if roll > 0.8 else "update"), self.rng.choice(alive)
        value = None if kind == "delete" else f"e{self.seed}-{self.count:06d}"
        meta = client.V1ObjectMeta(name=name, namespace=ns)
        if value is None:
            self.api.delete_namespaced_config_map(name, ns)
        elif kind == "create":
            self.api.create_namespaced_config_map(ns, self._body(meta, value))
        else:
            self.api.replace_namespaced_config_map(name, ns, self._body(meta, value))
        self.count += 1
        self.kinds[kind] += 1
        if value is not None:
            self.values.append(value)
        self.final[(ns, name)] = value
        self.history.append((time.time(), kind, ns, name, value))


@dataclass
class Outsider(Actor):
    """Foreign pushes of ``outside/<n>.txt`` (outside every GitTarget's folder)."""

    clones: dict[str, OutsideClone] = field(default_factory=dict)
    pushed: dict[str, list[str]] = field(default_factory=dict)  # repository -> commits
    rejected: int = 0

    @classmethod
    def cloning(
        cls, seed: int, stop: threading.Event, urls: dict[str, str], work: Path
    ) -> Outsider:
        clones = {repo: OutsideClone(url, work / f"outside-{repo}") for repo, url in urls.items()}
        return cls("outsider", seed, stop, clones=clones)

    def act(self) -> None:
        number = 0
        while self.pace(PUSH_GAP_S):
            repo = self.rng.choice(sorted(self.clones))
            self.push_once(repo, number)
            number += 1

    def push_once(self, repo: str, number: int) -> None:
        clone = self.clones[repo]
        for _ in range(PUSH_TRIES):
            clone.sync()
            clone.write({f"outside/{number:04d}.txt": f"outside change {number}\n"})
            commit = clone.commit(f"outside change {number}")
            try:
                clone.push()
            except subprocess.CalledProcessError:  # the product pushed first: fetch and redo
                self.rejected += 1
                continue
            self.pushed.setdefault(repo, []).append(commit)
            return
        self.errors.append(f"outside push {number} to {repo} lost the race {PUSH_TRIES} times")


@dataclass
class Chaos(Actor):
    """SIGKILLs a random victim and starts it again after a random pause."""

    system: System | None = None
    redis: RedisServer | None = None
    victims: tuple[str, ...] = VICTIMS
    kills: dict[str, int] = field(default_factory=dict)
    downtime_s: float = 0.0
    log: list[str] = field(default_factory=list)

    def act(self) -> None:
        started = time.monotonic()
        while self.pace(KILL_GAP_S):
            victim = self.rng.choice(self.victims)
            down = self.rng.uniform(*(REDIS_DOWN_S if victim == "redis" else PROCESS_DOWN_S))
            at = f"{time.monotonic() - started:7.1f}s ({time.time():.1f})"
            self.log.append(f"{at} kill -9 {victim}, {down:.1f}s")
            self.kill(victim)
            self.kills[victim] = self.kills.get(victim, 0) + 1
            self.stop.wait(down)  # the victim stays down this long (load, not synchronisation)
            self.revive(victim)
            self.downtime_s += down

    def kill(self, victim: str) -> None:
        assert self.system is not None and self.redis is not None
        if victim == "redis":
            self.redis.stop()
        else:
            kill_process(self.system, victim)

    def revive(self, victim: str) -> None:
        assert self.system is not None and self.redis is not None
        if victim == "redis":
            self.redis.start()
        else:
            start_process(self.system, victim)
