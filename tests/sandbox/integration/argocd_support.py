"""Shared pieces of the Argo CD double tests: a sandbox, a pushable clone, an Application.

No tests here. ``open_env`` starts an API server double (with the real Argo CD CRD from
``../shared/crds``) and a Git host on free ports, creates a repository holding one ConfigMap
under ``deploy/``, and builds an ``ArgoCDController`` on a ``FakeClock`` (for
``reconcile_due`` tests) or on the real clock (for tests that ``start()`` it).
``wait_app`` watches the Application until a condition holds, with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from sandbox.argocd import ArgoCDController, Settings
from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from sandbox.paths import third_party_crd_files
from tests.sandbox.integration.flux_support import BOOKMARK_INTERVAL_S, WorkTree, config_map
from tests.sandbox.integration.test_githost_support import Git

APPS = ("argoproj.io", "v1alpha1", "applications")
NAMESPACE = "argocd"
TARGET = "default"  # destination namespace of the applied objects
WAIT_S = 10.0
REFRESH = "argocd.argoproj.io/refresh"


@dataclass
class ArgoEnv:
    """Everything an Argo CD double test touches."""

    kube: KubeApiServer
    host: GitHost
    url: str
    work: WorkTree
    argo: ArgoCDController
    custom: client.CustomObjectsApi = field(init=False)
    core: client.CoreV1Api = field(init=False)

    def __post_init__(self) -> None:
        api = self.kube.api_client()
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def head(self) -> str:
        """The commit the remote's main points at."""
        return self.work.git.ls_remote(self.url)["refs/heads/main"]

    def create_app(
        self, name: str = "web", sync_policy: dict[str, Any] | None = None, **source: Any
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "project": "default",
            "source": {"repoURL": self.url, "path": "deploy", "targetRevision": "main", **source},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": TARGET},
        }
        if sync_policy is not None:
            spec["syncPolicy"] = sync_policy
        body = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec,
        }
        return dict(
            self.custom.create_namespaced_custom_object(*APPS[:2], NAMESPACE, APPS[2], body)
        )

    def get(self, name: str = "web") -> dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(*APPS[:2], NAMESPACE, APPS[2], name))

    def patch(self, body: dict[str, Any], name: str = "web") -> dict[str, Any]:
        """A JSON merge patch of the Application, as ``kubectl patch --type merge`` sends it."""
        return dict(
            self.custom.patch_namespaced_custom_object(*APPS[:2], NAMESPACE, APPS[2], name, body)
        )

    def set_operation(self, operation: dict[str, Any], name: str = "web") -> None:
        """Set ``operation`` (docs user-guide/sync-kubectl.md: a merge patch, A2)."""
        self.patch({"operation": operation}, name)

    def refresh(self, name: str = "web") -> None:
        """Ask for a refresh (``argo.RefreshApp``'s merge patch, A4)."""
        self.patch({"metadata": {"annotations": {REFRESH: "normal"}}}, name)

    def wait_app(
        self, holds: Callable[[dict[str, Any]], bool], name: str = "web", timeout: float = WAIT_S
    ) -> dict[str, Any]:
        """Watch the Application until ``holds`` is true of it; TimeoutError after ``timeout``."""
        deadline = time.monotonic() + timeout
        current = self.get(name)
        while not holds(current):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"Application {name} never matched; last: {current}")
            stream = watch.Watch()  # type: ignore[no-untyped-call]
            for event in stream.stream(  # type: ignore[no-untyped-call]
                self.custom.list_namespaced_custom_object,
                *APPS[:2],
                NAMESPACE,
                APPS[2],
                field_selector=f"metadata.name={name}",
                resource_version=current["metadata"]["resourceVersion"],
                timeout_seconds=max(1, int(left)),
            ):
                if event["type"] in ("ADDED", "MODIFIED"):
                    current = event["raw_object"]
                    if holds(current):
                        stream.stop()  # type: ignore[no-untyped-call]
                        break
        return current

    def live(self, name: str = "app") -> client.V1ConfigMap:
        return self.core.read_namespaced_config_map(name, TARGET)


def phase(app: dict[str, Any]) -> str | None:
    """``status.operationState.phase``."""
    return ((app.get("status") or {}).get("operationState") or {}).get("phase")


def finished(app: dict[str, Any]) -> bool:
    """The operation completed and was cleared (A2)."""
    return phase(app) in ("Succeeded", "Failed", "Error") and not app.get("operation")


def open_env(
    tmp_path: Path,
    *,
    clock: Callable[[], float] | None = None,
    files: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> Iterator[ArgoEnv]:
    """A running API double and Git host, a repository, a clone, and an (unstarted) double."""
    kube = KubeApiServer(third_party_crd_files(), bookmark_interval=BOOKMARK_INTERVAL_S)
    kube.start()
    namespace = client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
    client.CoreV1Api(kube.api_client()).create_namespace(namespace)
    host = GitHost(tmp_path / "host")
    host.start()
    try:
        initial = files or {"deploy/app.yaml": config_map("app", {"color": "blue"})}
        url = host.create_repo("fleet", files={k: v.encode() for k, v in initial.items()})
        work = WorkTree(Git(tmp_path / "home"), url, tmp_path / "work")
        argo = ArgoCDController(
            kube.api_client(), tmp_path / "argocd", clock=clock or time.time, settings=settings
        )
        yield ArgoEnv(kube, host, url, work, argo)
        argo.stopping()
        argo.stop()
    finally:
        host.stop()
        kube.stop()
