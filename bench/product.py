"""The whole product on the sandbox, configured as a user configures it, for end-to-end benchmarks.

The end-to-end benchmarks (``mirror``'s API-to-Git path, ``apply_trigger``) need the product's
processes (watcher, branch worker, dispatcher, receiver) running against the sandbox, and the
objects a user writes: a GitProvider, a GitTarget, a WatchRule and, for the apply trigger, a
webhook receiver and the Flux objects of docs/flux.md. The processes come from the e2e harness
(``tests.e2e.system.run_system``), so a benchmark runs the product exactly as the e2e tests and
``make demo`` run it.

Effects in other processes are awaited by polling a cheap condition under a deadline (the bare
repository's ref file, a Redis hash): there is nothing in this process to block on, and every
wait is bounded so a benchmark always ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client

from sandbox.githost.outside import git
from shared.model.ids import Branch, BranchKey
from shared.settings import Settings
from shared.store.keys import Keys
from tests.e2e.system import ALL, System, run_system

T = TypeVar("T")

NS = "bench"
GROUP = "gitopsreverser.io"
BRANCH = "main"
#: The GitTarget's folder; the Kustomization applies the same folder.
FOLDER = "apps"
#: The webhook secret the GitProvider's receiver and the Git host share.
TOKEN = "bench-webhook-secret"
#: How often a cross-process effect is re-checked: far below the latencies measured (tens of
#: milliseconds and up), and one small file read or one Redis round trip each time.
POLL_S = 0.001
#: Poll interval of waits that are not timed (set-up, settling between samples): API reads.
SLOW_POLL_S = 0.02
#: Longest wait for the product to start and pick up its configuration (a watcher reconcile
#: pass, a lease taken, a first commit).
SETUP_TIMEOUT_S = 60.0


def wait_for(what: str, check: Callable[[], T | None], timeout: float, poll: float = POLL_S) -> T:
    """Poll ``check`` until it returns something truthy; RuntimeError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench: timed out after {timeout}s waiting for {what}")
        time.sleep(poll)  # the effect is in another process: nothing here to block on


def read_tip(bare: Path, branch: str = BRANCH) -> str:
    """The branch's tip in a bare repository, read from its loose ref file when there is one.

    A push through ``git receive-pack`` writes the loose ref (renamed into place, so a read
    never sees half a file); only ``git pack-refs`` moves it, and then git itself answers.
    """
    loose = bare / "refs" / "heads" / branch
    try:
        return loose.read_text().strip()
    except FileNotFoundError:
        return git("rev-parse", branch, cwd=bare)


@contextmanager
def running(directory: Path, **settings: str) -> Iterator[System]:
    """The sandbox with Flux doubles and every product process, on the benchmark's Redis."""
    redis_url = Settings.from_env().redis_url
    yield from run_system(directory, redis_url, ALL, **settings)


@dataclass(frozen=True, slots=True)
class Repo:
    """The benchmark's repository on the sandbox Git host, and how to reach its state."""

    name: str
    url: str
    bare: Path
    keys: Keys

    @property
    def branch_key(self) -> BranchKey:
        return Branch(self.url, BRANCH).key

    def tip(self) -> str:
        return read_tip(self.bare)

    def wait_for_new_tip(self, old: str, timeout: float) -> str:
        """The tip, as soon as it is other than ``old``."""

        def moved() -> str | None:
            tip = self.tip()
            return tip if tip != old else None

        return wait_for("the remote tip to move", moved, timeout)


def repository(system: System, name: str) -> Repo:
    """Create ``name`` on the Git host (one README commit)."""
    url = system.repo(name)
    return Repo(name, url, system.bare(name), Keys(system.env["GITOPS_REVERSER_KEY_PREFIX"]))


def provider(url: str, commit_window: str, receiver: bool) -> dict[str, Any]:
    """A GitProvider for ``url``, optionally with a GitHub-style webhook receiver."""
    spec: dict[str, Any] = {
        "url": url,
        "allowedBranches": [BRANCH],
        "push": {"commitWindow": commit_window},
    }
    if receiver:
        spec["receiver"] = {"type": "github", "secretRef": {"name": "webhook"}}
    return _object(f"{GROUP}/v1alpha1", "GitProvider", "bench", spec)


def target(quiet_period: str | None) -> dict[str, Any]:
    """A GitTarget writing ``FOLDER``; with a quiet period, a Kustomization applies it."""
    spec: dict[str, Any] = {"providerRef": {"name": "bench"}, "branch": BRANCH, "path": FOLDER}
    if quiet_period is not None:
        spec["applier"] = {
            "kustomizationRef": {"name": "apps", "namespace": NS},
            "quietPeriod": quiet_period,
        }
    return _object(f"{GROUP}/v1alpha1", "GitTarget", "apps", spec)


def flux_objects(url: str) -> list[dict[str, Any]]:
    """The GitRepository (long interval: it fetches only when asked) and Kustomization."""
    source = {"url": url, "interval": "24h", "ref": {"branch": BRANCH}}
    applier = {
        "interval": "24h",
        "path": f"./{FOLDER}",
        "prune": False,
        "sourceRef": {"kind": "GitRepository", "name": "bench"},
    }
    return [
        _object("source.toolkit.fluxcd.io/v1", "GitRepository", "bench", source),
        _object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "apps", applier),
    ]


def _object(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": NS}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def configure(system: System, objects: list[dict[str, Any]]) -> None:
    """The namespace, the webhook Secret, a ClusterProvider admitting it, and ``objects``."""
    system.namespace(NS)
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name="webhook"), string_data={"token": TOKEN}
    )
    system.core.create_namespaced_secret(NS, secret)
    system.create(
        {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": "ClusterProvider",
            "metadata": {"name": "default"},
            "spec": {"accessFrom": {"selector": {}}},
        }
    )
    rules = [{"apiGroups": [""], "resources": ["configmaps"]}]
    watch_rule = {"targetRef": {"name": "apps"}, "rules": rules}
    for body in [*objects, _object(f"{GROUP}/v1alpha1", "WatchRule", "configs", watch_rule)]:
        system.create(body)


class ConfigMapEditor:
    """API edits of one ConfigMap through the official client, as ``kubectl edit`` makes them."""

    def __init__(self, system: System, name: str) -> None:
        self._core = system.core
        self._name = name

    def create(self, value: str) -> None:
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=self._name), data={"n": value})
        self._core.create_namespaced_config_map(NS, body)

    def edit(self, value: str) -> None:
        """One API write of ``data.n`` (the client sends a dict as a strategic merge patch)."""
        self._core.patch_namespaced_config_map(self._name, NS, {"data": {"n": value}})

    def path(self) -> str:
        """Where the GitTarget writes this ConfigMap (folder/namespace/resource/name.yaml)."""
        return f"{FOLDER}/{NS}/configmaps/{self._name}.yaml"
