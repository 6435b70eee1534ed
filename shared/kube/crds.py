"""Typed reads of our four custom resources and of what they refer to.

Each accessor lists or gets through one cluster's client and returns the views of
``shared.model.crds``, so no caller handles raw JSON for our own kinds. Secret data is
decoded here and returned to the caller only; it is never logged or stored.
"""

from __future__ import annotations

import base64
import binascii

from shared.kube.api import KubeClient
from shared.kube.errors import NotFound
from shared.kube.kinds import (
    CLUSTER_PROVIDERS,
    CLUSTER_WATCH_RULES,
    COMMIT_REQUESTS,
    CONFIG_MAPS,
    GIT_PROVIDERS,
    GIT_TARGETS,
    NAMESPACES,
    SECRETS,
    WATCH_RULES,
)
from shared.model.commit_requests import CommitRequestView, parse_commit_request
from shared.model.crds import (
    ClusterProviderView,
    ClusterWatchRuleView,
    GitProviderView,
    GitTargetView,
    WatchRuleView,
    parse_cluster_provider,
    parse_cluster_watch_rule,
    parse_git_provider,
    parse_git_target,
    parse_watch_rule,
)


class CrdReader:
    """Reads GitProviders, GitTargets, WatchRules and ClusterProviders of one cluster."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def git_providers(self) -> list[GitProviderView]:
        """Every GitProvider, in every namespace."""
        return [parse_git_provider(o) for o in self._client.list(GIT_PROVIDERS).items]

    def git_targets(self) -> list[GitTargetView]:
        """Every GitTarget, in every namespace."""
        return [parse_git_target(o) for o in self._client.list(GIT_TARGETS).items]

    def watch_rules(self) -> list[WatchRuleView]:
        """Every WatchRule, in every namespace."""
        return [parse_watch_rule(o) for o in self._client.list(WATCH_RULES).items]

    def cluster_watch_rules(self) -> list[ClusterWatchRuleView]:
        """Every ClusterWatchRule (cluster-scoped); none where the CRD is not installed (a
        chart from before it), so the rest of a pass is not held up by it."""
        try:
            listed = self._client.list(CLUSTER_WATCH_RULES).items
        except NotFound:
            return []
        return [parse_cluster_watch_rule(o) for o in listed]

    def commit_requests(self) -> list[CommitRequestView]:
        """Every CommitRequest, in every namespace; none where the CRD is not installed (a
        chart from before it)."""
        try:
            listed = self._client.list(COMMIT_REQUESTS).items
        except NotFound:
            return []
        return [parse_commit_request(o) for o in listed]

    def cluster_providers(self) -> list[ClusterProviderView]:
        """Every ClusterProvider."""
        return [parse_cluster_provider(o) for o in self._client.list(CLUSTER_PROVIDERS).items]

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        """Every namespace's labels (ClusterProvider admission reads them)."""
        return {
            str(o["metadata"]["name"]): dict(o["metadata"].get("labels") or {})
            for o in self._client.list(NAMESPACES).items
        }

    def object_data(self, namespace: str, kind: str, name: str) -> dict[str, bytes] | None:
        """A ConfigMap's data (``data`` and ``binaryData``) or a Secret's, as bytes; None when
        it does not exist (a GitProvider's ``spec.knownHostsRef``)."""
        if kind == "Secret":
            return self.secret_data(namespace, name)
        try:
            found = self._client.get(CONFIG_MAPS, namespace, name)
        except NotFound:
            return None
        data = {str(k): str(v).encode() for k, v in (found.get("data") or {}).items()}
        for key, value in (found.get("binaryData") or {}).items():
            try:
                data.setdefault(str(key), base64.b64decode(str(value), validate=True))
            except binascii.Error:
                continue
        return data

    def secret_data(self, namespace: str, name: str) -> dict[str, bytes] | None:
        """A Secret's decoded data, or None when it does not exist."""
        try:
            secret = self._client.get(SECRETS, namespace, name)
        except NotFound:
            return None
        data: dict[str, bytes] = {}
        for key, value in (secret.get("data") or {}).items():
            try:
                data[str(key)] = base64.b64decode(str(value), validate=True)
            except binascii.Error:
                continue  # not valid base64: the API server would not have stored it
        for key, value in (secret.get("stringData") or {}).items():
            data.setdefault(str(key), str(value).encode())
        return data
