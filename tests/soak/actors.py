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
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.githost.outside import OutsideClone
from tests.e2e.conftest import ApplierTenant, kill_process, start_process
from tests.e2e.system import ALL, System
from tests.integration.redis_group import PrimaryKiller
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
#: Bound on each API call of the editor (connect, read). Without one, a request the API never
#: answered (on a busy machine) held the editor past the soak's end for ever (outside check
#: 10); a request not answered in time is sent again, unchanged (see ``Write``).
REQUEST_TIMEOUT_S = (5.0, 10.0)
#: How long one write may stay unanswered, resent, before the editor reports the API hung
#: (well within the soak's wait for an actor to finish, ``JOIN_S``).
UNANSWERED_S = 60.0
#: Pause before a resend: pacing, not synchronisation (the API answered nothing to wait on).
RESEND_PAUSE_S = 0.2


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
            self.errors.append(f"{self.name} did not finish within {timeout}s{self._where()}")

    def _where(self) -> str:
        """Where the thread is now (the call that does not return), for the failure."""
        frame = sys._current_frames().get(self._thread.ident or -1)
        if frame is None:
            return ""
        return "; it is in:\n" + "".join(traceback.format_stack(frame, limit=12))

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
    #: The resourceVersion of each object as the editor's last write left it (preconditions)
    versions: dict[tuple[str, str], str] = field(default_factory=dict)

    def act(self) -> None:
        while self.pace(EDIT_GAP_S):
            self.edit_once()

    @staticmethod
    def _body(meta: client.V1ObjectMeta, value: str) -> client.V1ConfigMap:
        return client.V1ConfigMap(metadata=meta, data={"edit": value})

    def edit_once(self) -> None:
        ns = self.rng.choice(self.tenants).ns
        alive = sorted(name for (n, name), v in self.final.items() if n == ns and v is not None)
        roll = self.rng.random()
        if len(alive) < MIN_OBJECTS or (roll < 0.3 and len(alive) < MAX_OBJECTS):
            kind, name = "create", f"cm-{self.count:05d}"
        else:
            kind, name = ("delete" if roll > 0.8 else "update"), self.rng.choice(alive)
        value = None if kind == "delete" else f"e{self.seed}-{self.count:06d}"
        if not Write(self, kind, ns, name, value).outcome():
            return  # the object changed under the write (Flux applied it): choose again
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
    redis: RedisServer | PrimaryKiller | None = None
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


@dataclass
class Write:
    """One API write of the editor, sent until its outcome is known (outside check 10).

    Every call is bounded (``REQUEST_TIMEOUT_S``). A request not answered in time may still be
    applied later, so it is sent again as it was, never changed: an update and a delete carry
    the resourceVersion the editor last saw (a precondition), so of the copies at most one is
    applied; a create's copies are the same object, so a later one is refused as existing.
    A refusal is then read: the object holding this write's value (or, for a delete, being
    gone) means an earlier copy was applied.
    """

    editor: Editor
    kind: str
    ns: str
    name: str
    value: str | None
    sent: bool = False  # a copy went unanswered: it may have been applied

    @property
    def api(self) -> client.CoreV1Api:
        assert self.editor.api is not None
        return self.editor.api

    def outcome(self) -> bool:
        """True once the write is applied; False when the object changed under it."""
        deadline = time.monotonic() + UNANSWERED_S
        while time.monotonic() < deadline:
            try:
                self._send()
            except urllib3.exceptions.HTTPError:  # no answer in time: the same request again
                self.sent = True
                time.sleep(RESEND_PAUSE_S)
                continue
            except ApiException as err:
                if err.status not in (404, 409):
                    raise
                return self._refused(err.status, deadline)
            return True
        raise AssertionError(f"{self.kind} {self.ns}/{self.name}: no answer in {UNANSWERED_S}s")

    def _send(self) -> None:
        key, versions = (self.ns, self.name), self.editor.versions
        meta = client.V1ObjectMeta(name=self.name, namespace=self.ns)
        if self.kind == "delete":
            pre = client.V1Preconditions(resource_version=versions[key])
            options = client.V1DeleteOptions(preconditions=pre)
            self.api.delete_namespaced_config_map(
                self.name, self.ns, body=options, _request_timeout=REQUEST_TIMEOUT_S
            )
            versions.pop(key, None)
            return
        body = Editor._body(meta, self.value or "")
        if self.kind == "create":
            made = self.api.create_namespaced_config_map(
                self.ns, body, _request_timeout=REQUEST_TIMEOUT_S
            )
        else:
            meta.resource_version = versions[key]
            made = self.api.replace_namespaced_config_map(
                self.name, self.ns, body, _request_timeout=REQUEST_TIMEOUT_S
            )
        versions[key] = made.metadata.resource_version

    def _refused(self, status: int, deadline: float) -> bool:
        """404 or 409: whether an earlier copy was applied, from what the API holds now."""
        now = self._read(deadline)
        key = (self.ns, self.name)
        if now is None:
            if self.kind == "delete" and self.sent:
                self.editor.versions.pop(key, None)
                return True  # an earlier copy deleted it
            raise AssertionError(f"{self.kind} {self.ns}/{self.name}: {status}, and it is gone")
        self.editor.versions[key] = now.metadata.resource_version
        if self.sent and self.kind != "delete" and (now.data or {}).get("edit") == self.value:
            return True  # an earlier copy was applied
        if self.kind == "create":
            raise AssertionError(f"create {self.ns}/{self.name}: {status}, holding another value")
        return False

    def _read(self, deadline: float) -> client.V1ConfigMap | None:
        """The object as the API holds it now (None: not found), each read bounded."""
        while time.monotonic() < deadline:
            try:
                found: client.V1ConfigMap = self.api.read_namespaced_config_map(
                    self.name, self.ns, _request_timeout=REQUEST_TIMEOUT_S
                )
            except urllib3.exceptions.HTTPError:
                time.sleep(RESEND_PAUSE_S)
                continue
            except ApiException as err:
                if err.status == 404:
                    return None
                raise
            return found
        raise AssertionError(f"read {self.ns}/{self.name}: no answer in {UNANSWERED_S}s")
