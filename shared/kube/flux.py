"""The Flux objects an attempt reads and stamps (facts: appliers.md F1-F3).

A stamp is a JSON merge patch of ``metadata.annotations["reconcile.fluxcd.io/requestedAt"]``
with our own field manager, whose name must not start with ``kubectl``: kustomize-controller
takes over fields of such managers (F1, "Field-manager gotcha").
"""

from __future__ import annotations

from shared.kube.api import MERGE_PATCH, KubeClient, Obj
from shared.model.resources import ApiResource

_VERBS = frozenset({"get", "patch"})
GIT_REPOSITORIES = ApiResource(
    "source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository", True, _VERBS
)
KUSTOMIZATIONS = ApiResource(
    "kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization", True, _VERBS
)
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
FIELD_MANAGER = "gitops-reverser"


class FluxClient:
    """Get and stamp Kustomizations and their GitRepositories in one cluster."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def kustomization(self, namespace: str, name: str) -> Obj:
        """The Kustomization (NotFound when it does not exist)."""
        return self._client.get(KUSTOMIZATIONS, namespace, name)

    def source(self, kustomization: Obj) -> Obj:
        """The GitRepository a Kustomization reads (its own namespace when not given)."""
        ref = kustomization.get("spec", {}).get("sourceRef", {})
        namespace = ref.get("namespace") or kustomization["metadata"]["namespace"]
        return self._client.get(GIT_REPOSITORIES, namespace, str(ref.get("name", "")))

    def stamp(self, obj: Obj, token: str) -> None:
        """Ask Flux to reconcile ``obj`` (a GitRepository or Kustomization) now."""
        resource = GIT_REPOSITORIES if obj.get("kind") == "GitRepository" else KUSTOMIZATIONS
        meta = obj["metadata"]
        path = self._client.path(resource, meta["namespace"], meta["name"])
        patch = {"metadata": {"annotations": {REQUESTED_AT: token}}}
        self._client.request(
            "patch", path, body=patch, content_type=MERGE_PATCH, field_manager=FIELD_MANAGER
        )
