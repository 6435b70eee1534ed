"""The whole product on the sandbox, for e2e tests: every process started as a user starts it.

``System`` runs the sandbox (API double, Git host, Flux doubles) in the test process and the
product's processes from the Procfile (``sandbox.processes.Processes``), with a private key prefix
on the test Redis and short timings. Tests create objects through the official client, push
with real git, and wait (bounded) for effects in other processes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox import manifests as m
from sandbox.flux.pacing import Pacing
from sandbox.githost import Hook
from sandbox.githost.outside import git, push
from sandbox.processes import Processes, environment, free_port
from sandbox.stack import Identities, Sandbox, start

GROUP = "gitopsreverser.io"
ALL = ("watcher", "branch_worker", "dispatcher", "receiver")
#: ``git`` (someone else's, ``sandbox.githost.outside``) is re-exported for the tests.
__all__ = ["ALL", "GROUP", "System", "git", "run_system", "run_system_as"]


@dataclass
class System:
    """A running sandbox and product."""

    directory: Path
    sbx: Sandbox
    env: dict[str, str]
    receiver_port: int
    procs: Processes
    api: client.ApiClient = field(init=False)

    def __post_init__(self) -> None:
        self.api = self.sbx.api_client()

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a Namespace, a Secret or any custom resource from its manifest."""
        return m.create(self.api, body)

    def get(self, group: str, version: str, ns: str, plural: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_namespaced_custom_object(  # type: ignore[assignment]
            group, version, ns, plural, name
        )
        return found

    def namespace(self, name: str) -> None:
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))

    def repo(self, name: str, files: dict[str, bytes] | None = None) -> str:
        """A repository on the Git host; its clone URL."""
        return self.sbx.githost.create_repo(name, files=files or {"README.md": b"x\n"})

    def bare(self, name: str) -> Path:
        return self.sbx.githost.repo_path(name)

    def tip(self, name: str) -> str:
        return git("rev-parse", "main", cwd=self.bare(name))

    def push(self, repo: str, files: dict[str, str], message: str = "outside change") -> str:
        """Someone else pushes ``files`` to main; returns the new commit."""
        work = self.directory / f"clone-{uuid.uuid4().hex[:6]}"
        return push(self.sbx.githost.repo_url(repo), work, files, message)

    def hook(self, repo: str, path: str, provider: str, content_type: str, secret: str) -> None:
        """Point the Git host's webhook for ``repo`` at the receiver."""
        url = f"http://127.0.0.1:{self.receiver_port}{path}"
        self.sbx.githost.add_hook(repo, Hook(url, provider, content_type, secret))  # type: ignore[arg-type]

    def stop(self) -> None:
        self.procs.stop()
        self.sbx.stop()


#: Log folders of the systems running now, newest last: a failing test shows their tails.
RUNNING_LOGS: list[Path] = []


def run_system(
    directory: Path, redis_url: str, processes: tuple[str, ...] = ALL, **settings: str
) -> Iterator[System]:
    """Start everything; yields the System and stops it afterwards."""
    yield from run_system_as(None, directory, redis_url, processes, settings)


def run_system_as(
    identities: Identities | None,
    directory: Path,
    redis_url: str,
    processes: tuple[str, ...],
    settings: dict[str, str],
    *,
    flux_pacing: Pacing | None = None,
    commands: Mapping[str, str] | None = None,
) -> Iterator[System]:
    """``run_system``; with ``identities`` the API server double authenticates and authorizes
    every request (the product's kubeconfig carries its own token; the tests act as the
    administrator). The applier doubles run without pauses (a test that needs a slow apply
    holds ``pacing.gate``) unless ``flux_pacing`` is given (the soak runs Flux at its pinned
    default, ``sandbox.flux.pacing.flux_default``). ``commands`` replace the Procfile's
    (``Processes``; ``tests.e2e.window_off_worker`` starts a branch worker without the apply
    window)."""
    sbx = start(
        directory,
        repos=(),
        identities=identities,
        flux_pacing=flux_pacing or Pacing(),
        argocd_pacing=Pacing(),
    )
    port = free_port()
    env = environment(directory, port)
    env["GITOPS_REVERSER_REDIS_URL"] = redis_url
    env.update({f"GITOPS_REVERSER_{k.upper()}": v for k, v in settings.items()})
    procs = Processes(env, directory / "logs", commands=commands)
    system = System(directory, sbx, env, port, procs)
    RUNNING_LOGS.append(directory / "logs")
    try:
        procs.start(processes)
        yield system
    finally:
        RUNNING_LOGS.remove(directory / "logs")
        system.stop()
