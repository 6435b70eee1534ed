"""The doubles' only door to the Kubernetes API: the official client, nothing else.

GitRepositories and Kustomizations are read, listed and watched through ``CustomObjectsApi``
and their status is written through the ``/status`` subresource with a JSON merge patch,
under the field managers the real controllers use (``source-controller``; the Kustomization
status owner ``gotk-kustomize-controller``, ../shared/facts/appliers.md F3). Applied objects go
through the ``DynamicClient`` (see ``ssa``). A 404 is an answer here (the object is gone), not
an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from sandbox.flux.activity import GIT_REPOSITORY, KUSTOMIZATION
from sandbox.flux.triggers import ObjectKey

#: kind -> (group, version, plural) of the Flux kinds the doubles reconcile.
RESOURCES = {
    GIT_REPOSITORY: ("source.toolkit.fluxcd.io", "v1", "gitrepositories"),
    KUSTOMIZATION: ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
}
#: kind -> field manager of the controller's status patches.
STATUS_MANAGERS = {GIT_REPOSITORY: "source-controller", KUSTOMIZATION: "gotk-kustomize-controller"}
NOT_FOUND = 404


class FluxApi:
    """Typed-enough access to Flux objects for one API server (optionally one namespace)."""

    def __init__(self, api_client: client.ApiClient, workdir: Path, namespace: str | None) -> None:
        self._api_client = api_client
        self._custom = client.CustomObjectsApi(api_client)
        self._namespace = namespace
        self._discovery_cache = workdir / "discovery-cache.json"
        self._dynamic: dynamic.DynamicClient | None = None

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The object now, or None if it does not exist."""
        group, version, plural = RESOURCES[key.kind]
        try:
            found = cast(
                dict[str, Any],
                self._custom.get_namespaced_custom_object(
                    group, version, key.namespace, plural, key.name
                ),
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise
        return found

    def list(self, kind: str) -> tuple[list[dict[str, Any]], str]:
        """Every object of ``kind`` (in the namespace, if one is set) and the list's version."""
        listing, args = self.list_call(kind)
        body: dict[str, Any] = listing(*args)
        return list(body.get("items", [])), str(body.get("metadata", {}).get("resourceVersion", ""))

    def list_call(self, kind: str) -> tuple[Callable[..., Any], tuple[str, ...]]:
        """The list function and its positional arguments, as a watch needs them."""
        group, version, plural = RESOURCES[kind]
        if self._namespace is None:
            return self._custom.list_cluster_custom_object, (group, version, plural)
        return (
            self._custom.list_namespaced_custom_object,
            (group, version, self._namespace, plural),
        )

    def patch_status(self, key: ObjectKey, status: dict[str, Any]) -> dict[str, Any] | None:
        """Merge ``status`` into the object's status; None if the object is gone."""
        group, version, plural = RESOURCES[key.kind]
        try:
            patched = cast(
                dict[str, Any],
                self._custom.patch_namespaced_custom_object_status(
                    group,
                    version,
                    key.namespace,
                    plural,
                    key.name,
                    {"status": status},
                    field_manager=STATUS_MANAGERS[key.kind],
                ),
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise
        return patched

    def dynamic(self) -> dynamic.DynamicClient:
        """A dynamic client for applied objects (discovery cached under the work directory)."""
        if self._dynamic is None:
            self._dynamic = dynamic.DynamicClient(  # type: ignore[no-untyped-call]
                self._api_client, cache_file=str(self._discovery_cache)
            )
        return self._dynamic

    def secret_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """A Secret's (base64) ``data``, or None if it does not exist (``spec.decryption``)."""
        try:
            found = client.CoreV1Api(self._api_client).read_namespaced_secret(name, namespace)
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise
        return {str(k): str(v) for k, v in (found.data or {}).items()}
