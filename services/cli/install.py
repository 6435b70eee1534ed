"""Where an install keeps its state: its Redis URL and key prefix, read from the cluster.

The chart writes every process's shared settings into the ConfigMap ``<fullname>-settings``
(``GITOPS_REVERSER_KEY_PREFIX`` among them; templates/settings.yaml) and hands each process
its Redis URL as ``GITOPS_REVERSER_REDIS_URL`` (templates/_helpers.tpl ``gr.redisEnv``):
from the Secret holding the whole URL (``redis.url``: the chart's ``<fullname>-redis``, key
``url``; ``redis.existingSecret``: the user's), or, for the built-in Redis, spelt around
``$(REDIS_PASSWORD)``, which comes from the password Secret (``<fullname>-redis``, key
``password``, or ``redis.auth.existingSecret``). So the command reads the settings
ConfigMap, then the watcher Deployment's variable, and resolves it the way the kubelet does:
whichever Secrets the install names, this finds them.

The built-in Redis's address is a Service name inside the cluster; from a laptop,
``kubectl port-forward svc/<fullname>-redis 6379`` and ``--redis-address 127.0.0.1:6379``
keep the password and change the address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from services.cli.errors import CliError, NotFoundError
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import NotFound
from shared.model.resources import ApiResource

CONFIG_MAPS = ApiResource("", "v1", "configmaps", "ConfigMap", True, frozenset({"get", "list"}))
DEPLOYMENTS = ApiResource("apps", "v1", "deployments", "Deployment", True, frozenset({"get"}))
#: The chart's labels (templates/_helpers.tpl ``gr.labels``).
NAME_LABEL = "app.kubernetes.io/name=gitops-reverser"
SETTINGS_SUFFIX = "-settings"
KEY_PREFIX = "GITOPS_REVERSER_KEY_PREFIX"
REDIS_URL = "GITOPS_REVERSER_REDIS_URL"
#: The Deployment whose environment names the Redis URL (every product process has it).
WATCHER_SUFFIX = "-watcher"
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class InstallNotFound(NotFoundError):
    """No install of the chart is visible to this kubeconfig."""


@dataclass(frozen=True, slots=True)
class Install:
    """One install: its namespace, the chart's full name, Redis URL and key prefix."""

    namespace: str
    fullname: str
    redis_url: str
    key_prefix: str


def settings_configmap(kube: KubeClient, namespace: str) -> dict[str, Any]:
    """The install's settings ConfigMap (in ``namespace``, or the only one in the cluster)."""
    found = [
        cm
        for cm in kube.list(CONFIG_MAPS, namespace, label_selector=NAME_LABEL).items
        if str(cm["metadata"]["name"]).endswith(SETTINGS_SUFFIX)
        and KEY_PREFIX in (cm.get("data") or {})
    ]
    where = f"namespace {namespace}" if namespace else "any namespace"
    if not found:
        raise InstallNotFound(
            f"no gitops-reverser install in {where} (no ConfigMap labelled {NAME_LABEL} "
            f"holding {KEY_PREFIX}); pass --redis-url and --key-prefix"
        )
    if len(found) > 1:
        names = ", ".join(f"{c['metadata']['namespace']}/{c['metadata']['name']}" for c in found)
        raise CliError(f"several installs ({names}): pick one with --install-namespace")
    return found[0]


def _secret_value(reader: CrdReader, namespace: str, ref: dict[str, Any]) -> str:
    name, key = str(ref.get("name", "")), str(ref.get("key", ""))
    data = reader.secret_data(namespace, name)
    if data is None or key not in data:
        raise NotFoundError(f"Secret {namespace}/{name} has no key {key!r} (the Redis URL)")
    return data[key].decode()


def _resolve(reader: CrdReader, namespace: str, env: list[dict[str, Any]], name: str) -> str:
    """A container variable's value as the kubelet makes it: ``value`` with ``$(VAR)``
    references to earlier variables expanded, or ``valueFrom.secretKeyRef``."""
    entries = {str(e.get("name")): e for e in env}
    entry = entries.get(name)
    if entry is None:
        raise CliError(f"the install's watcher has no {name}")
    ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
    if ref:
        return _secret_value(reader, namespace, ref)
    value = str(entry.get("value", ""))
    return _REFERENCE.sub(
        lambda m: _resolve(reader, namespace, env, m[1]) if m[1] in entries else m[0], value
    )


def find_install(kube: KubeClient, namespace: str = "") -> Install:
    """The install the kubeconfig sees (in ``namespace`` when given)."""
    cm = settings_configmap(kube, namespace)
    ns = str(cm["metadata"]["namespace"])
    fullname = str(cm["metadata"]["name"]).removesuffix(SETTINGS_SUFFIX)
    try:
        deployment = kube.get(DEPLOYMENTS, ns, fullname + WATCHER_SUFFIX)
    except NotFound as err:
        raise InstallNotFound(
            f"Deployment {ns}/{fullname}{WATCHER_SUFFIX} not found (the Redis URL is read from "
            "its environment); pass --redis-url"
        ) from err
    containers = deployment["spec"]["template"]["spec"]["containers"]
    url = _resolve(CrdReader(kube), ns, list(containers[0].get("env") or []), REDIS_URL)
    return Install(ns, fullname, url, str(cm["data"][KEY_PREFIX]))


def with_address(url: str, address: str) -> str:
    """``url`` with its host and port replaced by ``address`` (``host:port``), credentials,
    database and scheme kept: the built-in Redis reached through ``kubectl port-forward``."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@{address}" if credentials else address
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
