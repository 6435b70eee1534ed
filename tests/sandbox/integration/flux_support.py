"""Shared pieces of the Flux double tests: a sandbox with a Git host and a pushable clone.

No tests here. ``open_env`` starts an API server double (with the real Flux CRDs from
``../shared/crds``) and a Git host on free ports, creates a repository holding one ConfigMap
under ``deploy/``, and builds ``FluxControllers`` on a ``FakeClock`` (for ``reconcile_due``
tests) or on the real clock (for tests that ``start()`` the watches).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox.flux import FluxControllers
from sandbox.flux.pacing import Pacing
from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from sandbox.paths import third_party_crd_files
from tests.sandbox.integration.test_githost_support import Git

SOURCE = ("source.toolkit.fluxcd.io", "v1", "gitrepositories")
KUSTOMIZE = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
NAMESPACE = "default"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
WAIT_S = 10.0  # generous bound for an event-driven reconcile to show up
# The API double sends a watch's response headers with its first line, and a client can only
# interrupt a stream whose headers arrived; frequent bookmarks keep stop() prompt in tests.
BOOKMARK_INTERVAL_S = 0.2


def config_map(name: str, data: dict[str, str]) -> str:
    """A ConfigMap manifest as a file in Git holds it."""
    lines = [f"  {key}: {value!r}" for key, value in data.items()]
    return (
        "\n".join(
            [
                "apiVersion: v1",
                "kind: ConfigMap",
                "metadata:",
                f"  name: {name}",
                f"  namespace: {NAMESPACE}",
                "data:",
                *lines,
            ]
        )
        + "\n"
    )


@dataclass
class FakeClock:
    """An injected clock that moves only when told to."""

    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class WorkTree:
    """A clone of the sandbox repository that tests commit to and push from."""

    def __init__(self, git: Git, url: str, path: Path) -> None:
        self.git = git
        self.path = git.clone(url, path)

    def push(
        self, files: dict[str, str], removed: tuple[str, ...] = (), message: str = "change"
    ) -> str:
        """Write ``files``, delete ``removed``, commit, push main; the new commit."""
        for name, text in files.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(text)
        for name in removed:
            (self.path / name).unlink()
        self.git.run("add", "-A", cwd=self.path)
        self.git.run("commit", "--quiet", "-m", message, cwd=self.path)
        self.git.run("push", "--quiet", "origin", "HEAD:main", cwd=self.path)
        return self.git.head(self.path)


@dataclass
class FluxEnv:
    """Everything a Flux double test touches."""

    kube: KubeApiServer
    host: GitHost
    url: str
    work: WorkTree
    flux: FluxControllers
    clock: Callable[[], float]
    custom: client.CustomObjectsApi = field(init=False)
    core: client.CoreV1Api = field(init=False)

    def __post_init__(self) -> None:
        api = self.kube.api_client()
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def head(self) -> str:
        """The commit the remote's main points at."""
        return self.work.git.ls_remote(self.url)["refs/heads/main"]

    def create_source(
        self, name: str = "app", interval: str = "60m", **spec: Any
    ) -> dict[str, Any]:
        body = {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"url": self.url, "interval": interval, "ref": {"branch": "main"}, **spec},
        }
        return dict(
            self.custom.create_namespaced_custom_object(*SOURCE[:2], NAMESPACE, SOURCE[2], body)
        )

    def create_kustomization(
        self, name: str = "app", source: str = "app", interval: str = "60m", **spec: Any
    ) -> dict[str, Any]:
        body = {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "interval": interval,
                "path": "./deploy",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": source},
                **spec,
            },
        }
        return dict(
            self.custom.create_namespaced_custom_object(
                *KUSTOMIZE[:2], NAMESPACE, KUSTOMIZE[2], body
            )
        )

    def get(self, resource: tuple[str, str, str], name: str = "app") -> dict[str, Any]:
        return dict(
            self.custom.get_namespaced_custom_object(
                resource[0], resource[1], NAMESPACE, resource[2], name
            )
        )

    def patch(
        self, resource: tuple[str, str, str], body: dict[str, Any], name: str = "app"
    ) -> dict[str, Any]:
        """A JSON merge patch, as ``flux reconcile`` sends it (F1), by a non-kubectl manager."""
        return dict(
            self.custom.patch_namespaced_custom_object(
                resource[0],
                resource[1],
                NAMESPACE,
                resource[2],
                name,
                body,
                field_manager="gitops-reverser-test",
            )
        )

    def request(
        self, resource: tuple[str, str, str], token: str, name: str = "app"
    ) -> dict[str, Any]:
        """Set a new ``reconcile.fluxcd.io/requestedAt`` token."""
        return self.patch(resource, {"metadata": {"annotations": {REQUESTED_AT: token}}}, name)


def open_env(
    tmp_path: Path, *, clock: Callable[[], float] | None = None, files: dict[str, str] | None = None
) -> Iterator[FluxEnv]:
    """A running API double and Git host, a repository, a clone, and (unstarted) doubles."""
    kube = KubeApiServer(third_party_crd_files(), bookmark_interval=BOOKMARK_INTERVAL_S)
    kube.start()
    host = GitHost(tmp_path / "host")
    host.start()
    try:
        initial = files or {"deploy/app.yaml": config_map("app", {"color": "blue"})}
        url = host.create_repo("fleet", files={k: v.encode() for k, v in initial.items()})
        work = WorkTree(Git(tmp_path / "home"), url, tmp_path / "work")
        flux = FluxControllers(
            kube.api_client(), tmp_path / "flux", clock=clock or time.time, pacing=Pacing()
        )
        yield FluxEnv(kube, host, url, work, flux, clock or time.time)
        flux.stop()
    finally:
        host.stop()
        kube.stop()
