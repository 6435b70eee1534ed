"""The Argo CD double's door to Applications: the official client, nothing else.

The Application CRD has no status subresource (../shared/facts/appliers.md A1), so status is
written on the object itself: merge patches, as the controller's ``persistAppStatus`` and
``setOperationState`` send them (A2: v3.5.1 patches ``{"status": {"operationState": ...},
"operation": null}``), and a whole-object update guarded by ``resourceVersion`` where
autoSync sets an operation (``SetAppOperation``, A2). None of these carries a field manager,
so the API server names the writer after the client's User-Agent, which is the controller's:
``argocd-application-controller/<version> (<platform>)`` (A5).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from sandbox.flux.triggers import ObjectKey

GROUP, VERSION, PLURAL = "argoproj.io", "v1alpha1", "applications"
APPLICATION = "Application"
USER_AGENT = "argocd-application-controller/v3.5.1 (linux/amd64)"  # A5
NOT_FOUND, CONFLICT = 404, 409


class ArgoApi:
    """Applications of one API server (optionally one namespace), and a dynamic client."""

    def __init__(self, api_client: client.ApiClient, workdir: Path, namespace: str | None) -> None:
        api_client.user_agent = USER_AGENT
        self._api_client = api_client
        self._custom = client.CustomObjectsApi(api_client)
        self._namespace = namespace
        self._discovery_cache = workdir / "discovery-cache.json"
        self._dynamic: dynamic.DynamicClient | None = None

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        """The Application now, or None if it does not exist."""
        try:
            return cast(
                dict[str, Any],
                self._custom.get_namespaced_custom_object(
                    GROUP, VERSION, key.namespace, PLURAL, key.name
                ),
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise

    def list(self, kind: str = APPLICATION) -> tuple[list[dict[str, Any]], str]:
        """Every Application (in the namespace, if one is set) and the list's version."""
        listing, args = self.list_call(kind)
        body: dict[str, Any] = listing(*args)
        return list(body.get("items", [])), str(body.get("metadata", {}).get("resourceVersion", ""))

    def list_call(self, kind: str = APPLICATION) -> tuple[Callable[..., Any], tuple[str, ...]]:
        """The list function and its positional arguments, as a watch needs them."""
        if self._namespace is None:
            return self._custom.list_cluster_custom_object, (GROUP, VERSION, PLURAL)
        return self._custom.list_namespaced_custom_object, (GROUP, VERSION, self._namespace, PLURAL)

    def patch(self, key: ObjectKey, body: Any, json_patch: bool = False) -> dict[str, Any] | None:
        """A JSON merge patch (or a JSON patch) of the Application; None if it is gone."""
        kind = "json-patch" if json_patch else "merge-patch"
        try:
            return cast(
                dict[str, Any],
                self._custom.patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    key.namespace,
                    PLURAL,
                    key.name,
                    body,
                    _content_type=f"application/{kind}+json",
                ),
            )
        except ApiException as err:
            if err.status == NOT_FOUND:
                return None
            raise

    def replace(self, key: ObjectKey, app: dict[str, Any]) -> bool:
        """Update the whole Application at its ``resourceVersion``; False on a 409 or 404."""
        try:
            self._custom.replace_namespaced_custom_object(
                GROUP, VERSION, key.namespace, PLURAL, key.name, app
            )
        except ApiException as err:
            if err.status in (CONFLICT, NOT_FOUND):
                return False
            raise
        return True

    def dynamic(self) -> dynamic.DynamicClient:
        """A dynamic client for the objects a sync applies (discovery cached on disk)."""
        if self._dynamic is None:
            self._dynamic = dynamic.DynamicClient(  # type: ignore[no-untyped-call]
                self._api_client, cache_file=str(self._discovery_cache)
            )
        return self._dynamic
