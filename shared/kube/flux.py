"""The Flux resource types and the stamp that asks Flux to reconcile (facts: appliers.md F1-F3).

A stamp is a JSON merge patch of ``metadata.annotations["reconcile.fluxcd.io/requestedAt"]``
with our own field manager, whose name must not start with ``kubectl``: kustomize-controller
takes over fields of such managers (F1, "Field-manager gotcha"). What to read and when to stamp
is the Flux applier's business (``shared.appliers.flux``); this module only knows the wire.
"""

from __future__ import annotations

from shared.kube.api import MERGE_PATCH, KubeClient
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


def request_reconcile(
    client: KubeClient, resource: ApiResource, namespace: str, name: str, token: str
) -> None:
    """Ask Flux to reconcile one GitRepository or Kustomization now, under ``token``."""
    path = client.path(resource, namespace, name)
    patch = {"metadata": {"annotations": {REQUESTED_AT: token}}}
    client.request("patch", path, body=patch, content_type=MERGE_PATCH, field_manager=FIELD_MANAGER)
