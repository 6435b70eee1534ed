"""Manifests of the objects a user writes (ours, Flux's, Argo CD's), and one way to create them.

The demo, the e2e harness and the tests that configure a whole setup build the same objects;
these builders keep them in one place, shaped as docs/flux.md and docs/argocd.md show them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml
from kubernetes import client

from sandbox.paths import all_crd_files

GROUP = "gitopsreverser.io"
OURS = f"{GROUP}/v1alpha1"
SOURCE = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE = "kustomize.toolkit.fluxcd.io/v1"
ARGOCD = "argoproj.io/v1alpha1"
Manifest = dict[str, Any]


def _object(api_version: str, kind: str, name: str, namespace: str, spec: Manifest) -> Manifest:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def cluster_provider(name: str = "default", **spec: Any) -> Manifest:
    """A ClusterProvider; default ``accessFrom: {selector: {}}`` admits every namespace."""
    return _object(OURS, "ClusterProvider", name, "", spec or {"accessFrom": {"selector": {}}})


def git_provider(namespace: str, name: str, url: str, **spec: Any) -> Manifest:
    """A GitProvider for ``url`` that allows ``main``."""
    return _object(
        OURS, "GitProvider", name, namespace, {"url": url, "allowedBranches": ["main"], **spec}
    )


def git_target(namespace: str, name: str, provider: str, path: str, **spec: Any) -> Manifest:
    """A GitTarget writing ``path`` on ``main``."""
    return _object(
        OURS,
        "GitTarget",
        name,
        namespace,
        {"providerRef": {"name": provider}, "branch": "main", "path": path, **spec},
    )


def kustomization_applier(namespace: str, name: str, **extra: Any) -> Manifest:
    """``spec.applier`` naming a Kustomization."""
    return {"kustomizationRef": {"name": name, "namespace": namespace}, **extra}


def watch_rule(namespace: str, name: str, target: str, resources: list[str]) -> Manifest:
    """A WatchRule selecting core-group ``resources`` of its namespace."""
    return _object(
        OURS,
        "WatchRule",
        name,
        namespace,
        {"targetRef": {"name": target}, "rules": [{"apiGroups": [""], "resources": resources}]},
    )


def git_repository(namespace: str, name: str, url: str, branch: str = "main") -> Manifest:
    """A GitRepository that never fetches on its own (docs/flux.md)."""
    return _object(
        SOURCE,
        "GitRepository",
        name,
        namespace,
        {"url": url, "interval": "24h", "ref": {"branch": branch}},
    )


def kustomization(
    namespace: str, name: str, source: str, path: str, prune: bool = True
) -> Manifest:
    """A Kustomization of ``path`` from the GitRepository ``source``."""
    return _object(
        KUSTOMIZE,
        "Kustomization",
        name,
        namespace,
        {
            "interval": "24h",
            "path": path,
            "prune": prune,
            "sourceRef": {"kind": "GitRepository", "name": source},
        },
    )


def application_applier(namespace: str, name: str) -> Manifest:
    """``spec.applier`` naming an Argo CD Application."""
    return {"applicationRef": {"name": name, "namespace": namespace}}


def application(namespace: str, name: str, url: str, path: str, destination: str) -> Manifest:
    """An Application as docs/argocd.md sets one up: automated sync off with ``prune`` kept,
    the folder read with its subfolders, applied server-side into ``destination``."""
    return _object(
        ARGOCD,
        "Application",
        name,
        namespace,
        {
            "project": "default",
            "source": {
                "repoURL": url,
                "targetRevision": "main",
                "path": path,
                "directory": {"recurse": True},
            },
            "destination": {"server": "https://kubernetes.default.svc", "namespace": destination},
            "syncPolicy": {
                "automated": {"enabled": False, "prune": True},
                "syncOptions": ["ServerSideApply=true"],
            },
        },
    )


@cache
def plural_of(kind: str) -> str:
    """The resource name of a custom kind, as its CRD declares it (read once per kind: the
    many-targets benchmark creates thousands of resources)."""
    for path in all_crd_files():
        for crd in yaml.safe_load_all(path.read_text()):
            if crd and crd.get("spec", {}).get("names", {}).get("kind") == kind:
                return str(crd["spec"]["names"]["plural"])
    raise KeyError(kind)


def create(api: client.ApiClient, body: Manifest) -> Manifest:
    """Create a Namespace, a Secret or any custom resource from its manifest."""
    namespace = body["metadata"].get("namespace", "")
    if body["kind"] == "Namespace":
        return dict(client.CoreV1Api(api).create_namespace(body).to_dict())  # type: ignore[arg-type]
    if body["kind"] == "Secret":
        secrets = client.CoreV1Api(api)
        return dict(secrets.create_namespaced_secret(namespace, body).to_dict())  # type: ignore[arg-type]
    group, _, version = body["apiVersion"].rpartition("/")
    custom = client.CustomObjectsApi(api)
    plural = plural_of(body["kind"])
    if namespace:
        made: Manifest = custom.create_namespaced_custom_object(  # type: ignore[assignment]
            group, version, namespace, plural, body
        )
    else:
        made = custom.create_cluster_custom_object(group, version, plural, body)  # type: ignore[assignment]
    return made
