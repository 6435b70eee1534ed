"""Webhook tokens, read from Kubernetes Secrets with a short cache (R5).

Every delivery needs its receiver's token, and a busy repository sends many; asking the API
server each time would make it the receiver's bottleneck, so values are kept for
``Settings.secret_cache`` (default 10 s): a rotated token is honoured within that time. A
missing Secret or key is cached as missing for the same time. Values live only in this
process's memory: they are never logged, stored in Redis, or put in an answer.

The source is injected (``SecretSource``), so tests and the benchmark pass a dict; production
reads through ``shared.kube`` (``KubeSecrets``), the only package that talks to Kubernetes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from services.receiver.cache import TtlCache
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.settings import Settings


class SecretSource(Protocol):
    """``(namespace, name, key) -> value``; None when the Secret or the key does not exist.

    Raises ``SecretUnavailable`` when the answer cannot be known now (the API is unreachable).
    """

    def __call__(self, namespace: str, name: str, key: str) -> bytes | None: ...


class SecretUnavailable(Exception):
    """The Secret could not be read right now (answered 503: the host may retry)."""


class CachedSecrets:
    """A SecretSource that remembers each answer for ``ttl``."""

    def __init__(self, source: SecretSource, ttl: timedelta, clock: Callable[[], float]) -> None:
        self._source = source
        self._cache: TtlCache[tuple[str, str, str], bytes | None] = TtlCache(ttl, clock)

    def __call__(self, namespace: str, name: str, key: str) -> bytes | None:
        return self._cache.get((namespace, name, key), lambda k: self._source(*k))


class KubeSecrets:
    """A SecretSource over the cluster the product runs in (built on first use)."""

    def __init__(self, factory: ClientFactory) -> None:
        self._factory = factory

    @classmethod
    def from_settings(cls, settings: Settings, clock: Callable[[], float]) -> KubeSecrets:
        """Through the kubeconfig of the settings, or the in-cluster service account."""
        return cls(ClientFactory(settings, clock))

    def __call__(self, namespace: str, name: str, key: str) -> bytes | None:
        try:
            data = CrdReader(self._factory.local().client).secret_data(namespace, name)
        except KubeError as err:
            raise SecretUnavailable(f"Secret {namespace}/{name} unreadable: {err}") from err
        return None if data is None else data.get(key)
