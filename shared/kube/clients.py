"""A client per ClusterProvider: the cluster we run in, or one reached by a kubeconfig Secret.

A ClusterProvider without ``spec.kubeConfig`` is the cluster the product runs in: the
kubeconfig named by ``Settings.kubeconfig`` when set, else the in-cluster service account.
Otherwise its kubeconfig is read from the Secret ``spec.kubeConfig.secretRef`` in the
product's own namespace (``Settings.namespace``), through the local cluster. Clients are
kept per ClusterProvider and rebuilt when the Secret changes (a new resourceVersion).
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException

from shared.kube.api import KubeClient
from shared.kube.discovery import Discovery
from shared.kube.errors import KubePermanent, NotFound
from shared.kube.kinds import SECRETS
from shared.model.crds import ClusterProviderView
from shared.settings import Settings

#: Shown to the API server as the client, and recorded as the field manager of our writes.
USER_AGENT = "gitops-reverser"
LOCAL = "(local)"


class KubeConfigError(KubePermanent):
    """A ClusterProvider's kubeconfig cannot be used; ``reason`` is the condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Cluster:
    """One cluster: its client and its discovery cache."""

    name: str
    client: KubeClient
    discovery: Discovery


def _local_api_client(settings: Settings) -> ApiClient:
    configuration = Configuration()
    try:
        if settings.kubeconfig:
            kube_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=settings.kubeconfig, client_configuration=configuration
            )
        else:
            kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, yaml.YAMLError) as err:
        where = settings.kubeconfig or "the in-cluster service account"
        raise KubePermanent(f"cannot configure a client from {where}: {err}") from err
    return ApiClient(configuration)


#: kubeconfig user fields that run a program or read our pod's files: a Secret in our
#: namespace must not be able to do either (upstream refuses them too,
#: facts/upstream-gitops-reverser.md §2.5).
_EXEC_FIELDS = frozenset({"exec", "auth-provider"})
_FILE_FIELDS = frozenset({"client-certificate", "client-key", "certificate-authority", "tokenFile"})


def kubeconfig_problem(document: dict[str, Any]) -> KubeConfigError | None:
    """Why a kubeconfig may not be used, or None when it only carries data."""
    entries = [
        entry.get(part) or {}
        for section, part in (("users", "user"), ("clusters", "cluster"))
        for entry in document.get(section) or []
        if isinstance(entry, dict)
    ]
    for fields in entries:
        if _EXEC_FIELDS & set(fields):
            return KubeConfigError("KubeConfigExecNotAllowed", "kubeconfig runs a program")
        if _FILE_FIELDS & set(fields):
            return KubeConfigError("KubeConfigFileReferenceNotAllowed", "kubeconfig names files")
    return None


def _decode_kubeconfig(provider: ClusterProviderView, data: dict[str, str], key: str) -> ApiClient:
    name = provider.meta.name
    if key not in data:
        raise KubeConfigError("KubeConfigKeyNotFound", f"kubeconfig Secret has no key {key!r}")
    try:
        document = yaml.safe_load(base64.b64decode(data[key], validate=True))
        if not isinstance(document, dict):
            raise KubeConfigError("KubeConfigInvalid", f"{name}: the kubeconfig is not a map")
        unsafe = kubeconfig_problem(document)
        if unsafe is not None:
            raise unsafe
        client: ApiClient = kube_config.new_client_from_config_dict(document)  # type: ignore[no-untyped-call]
        return client
    except (binascii.Error, yaml.YAMLError, ConfigException, ValueError, KeyError) as err:
        raise KubeConfigError("KubeConfigInvalid", f"{name}: unusable kubeconfig: {err}") from err


class ClientFactory:
    """Clusters by ClusterProvider, built on first use and kept while their config holds."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float],
        local: ApiClient | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._local_api = local
        self._local: Cluster | None = None
        self._remote: dict[str, tuple[str, Cluster]] = {}
        self._lock = threading.Lock()

    def _cluster(self, name: str, api_client: ApiClient) -> Cluster:
        api_client.user_agent = USER_AGENT
        client = KubeClient(api_client, name)
        return Cluster(name, client, Discovery(client, self._clock))

    def local(self) -> Cluster:
        """The cluster we run in."""
        with self._lock:
            if self._local is None:
                api = self._local_api or _local_api_client(self._settings)
                self._local = self._cluster(LOCAL, api)
            return self._local

    def for_provider(self, provider: ClusterProviderView) -> Cluster:
        """The cluster a ClusterProvider names; KubeConfigError when it cannot be reached."""
        if provider.kubeconfig_secret is None:
            return self.local()
        secret_name, key = provider.kubeconfig_secret
        namespace = self._settings.namespace
        try:
            secret = self.local().client.get(SECRETS, namespace, secret_name)
        except NotFound as err:
            message = f"kubeconfig Secret {namespace}/{secret_name} not found"
            raise KubeConfigError("KubeConfigSecretNotFound", message) from err
        version = f"{secret['metadata'].get('resourceVersion', '')}/{key}"
        with self._lock:
            known = self._remote.get(provider.meta.name)
            if known is not None and known[0] == version:
                return known[1]
        api = _decode_kubeconfig(provider, dict(secret.get("data") or {}), key)
        cluster = self._cluster(provider.meta.name, api)
        with self._lock:  # watches still on the old client keep it until they restart
            self._remote[provider.meta.name] = (version, cluster)
        return cluster

    def forget(self, keep: set[str]) -> None:
        """Close the clients of ClusterProviders that are gone."""
        with self._lock:
            gone = [name for name in self._remote if name not in keep]
            closing = [self._remote.pop(name)[1] for name in gone]
        for cluster in closing:
            cluster.client.close()

    def close(self) -> None:
        """Close every client (the local one too, unless it was handed in)."""
        self.forget(set())
        if self._local is not None and self._local_api is None:
            self._local.client.close()
