"""A client of the cluster a person's kubeconfig names, as kubectl picks it.

The product's processes run with a service account or ``Settings.kubeconfig``
(``shared.kube.clients``); the ``gitops-reverser`` command runs as the person at the
terminal, so it loads the kubeconfig as kubectl does: ``--kubeconfig`` when given, else the
files of ``KUBECONFIG`` (merged, read by the client library itself), else
``~/.kube/config``; ``--context`` when given, else the current context. The namespace of that
context is the default one of namespaced commands (kubectl's ``-n`` default).
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException

from shared.kube.api import KubeClient
from shared.kube.errors import KubePermanent

#: kubectl's namespace when the context names none.
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class UserCluster:
    """The person's cluster: a client, the context's name and its namespace."""

    client: KubeClient
    context: str
    namespace: str


def user_cluster(kubeconfig: str | None = None, context: str | None = None) -> UserCluster:
    """Load the kubeconfig as kubectl does; KubePermanent when it cannot be used."""
    configuration = Configuration()
    try:
        contexts, current = kube_config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        chosen = next((c for c in contexts if c["name"] == context), None) if context else current
        if chosen is None:
            raise KubePermanent(f"context {context!r} is not in the kubeconfig")
        kube_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=chosen["name"], client_configuration=configuration
        )
    except (ConfigException, OSError, yaml.YAMLError) as err:
        where = kubeconfig or "KUBECONFIG or ~/.kube/config"
        raise KubePermanent(f"cannot use the kubeconfig ({where}): {err}") from err
    namespace = str((chosen.get("context") or {}).get("namespace") or DEFAULT_NAMESPACE)
    client = KubeClient(ApiClient(configuration), str(chosen["name"]))
    return UserCluster(client, str(chosen["name"]), namespace)
