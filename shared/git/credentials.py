"""From a GitProvider's Secret name to git's environment: the one resolver every caller uses.

The Secret is read through a callable the caller injects (``CrdReader.secret_data`` in the
product), so this module needs no Kubernetes client and the layers stay apart; what a Secret
means is decided once, in ``shared.git.auth.env_for_secret``. Credentials are read when a
remote is about to be called and are never kept in Redis (R5).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from shared.git.auth import KNOWN_HOSTS_KEYS, env_for_secret, value_of
from shared.git.errors import GitPermanent

#: Reads a Secret's data by (namespace, name); None when it does not exist.
SecretReader = Callable[[str, str], Mapping[str, bytes] | None]
#: Reads a ConfigMap's or a Secret's data by (namespace, kind, name); None when it is absent.
ObjectReader = Callable[[str, str, str], Mapping[str, bytes] | None]
#: The kinds a GitProvider's ``spec.knownHostsRef`` may name (ConfigMap by default).
KNOWN_HOSTS_KINDS = ("ConfigMap", "Secret")


class KnownHostsMissing(GitPermanent):
    """``spec.knownHostsRef`` names an object that is absent or holds no known hosts: SSH
    fails closed until it does (no host key is ever accepted unseen)."""


def known_hosts_of(read: ObjectReader, namespace: str, ref: str) -> bytes | None:
    """The known hosts of a ``spec.knownHostsRef`` written as ``Kind/name`` (None for "").

    Its ``known_hosts`` key, else ``ssh_known_hosts`` (Argo CD's ConfigMap's key); raises
    KnownHostsMissing when the object or both keys are missing.
    """
    if not ref:
        return None
    kind, _, name = ref.partition("/")
    data = read(namespace, kind, name)
    if data is None:
        raise KnownHostsMissing(f"{kind} {namespace}/{name} (spec.knownHostsRef) not found")
    hosts = value_of(data, *KNOWN_HOSTS_KEYS)
    if hosts is None:
        keys = " or ".join(KNOWN_HOSTS_KEYS)
        raise KnownHostsMissing(f"{kind} {namespace}/{name} (spec.knownHostsRef) has no {keys}")
    return hosts


def with_known_hosts(secret: Mapping[str, bytes], hosts: bytes | None) -> Mapping[str, bytes]:
    """The Secret's data, with ``hosts`` as its known hosts when it holds none of its own
    (the Secret's own come first, then ``spec.knownHostsRef``'s)."""
    if hosts is None or value_of(secret, *KNOWN_HOSTS_KEYS) is not None:
        return secret
    return {**secret, KNOWN_HOSTS_KEYS[0]: hosts}


class SecretMissing(GitPermanent):
    """The GitProvider names a Secret that does not exist: no call can succeed until it does."""


def secret_of(read: SecretReader, namespace: str, name: str | None) -> Mapping[str, bytes]:
    """The named Secret's data; empty when no Secret is named (the remote needs none).

    Raises SecretMissing when the named Secret is absent; the reader's own errors (an API
    that cannot be reached) pass through for the caller to classify.
    """
    if not name:
        return {}
    data = read(namespace, name)
    if data is None:
        raise SecretMissing(f"Secret {namespace}/{name} not found")
    return data


def resolve(
    read: SecretReader,
    namespace: str,
    name: str | None,
    ssh_folder: Path,
    hosts: bytes | None = None,
) -> dict[str, str]:
    """git's environment for the remote of a GitProvider whose Secret is ``namespace/name``
    (``hosts``: its ``spec.knownHostsRef``'s known hosts, ``known_hosts_of``).

    For callers that keep a working copy: the SSH files stay in ``ssh_folder`` for later calls.
    """
    secret = with_known_hosts(secret_of(read, namespace, name), hosts)
    return env_for_secret(secret, ssh_folder)


@contextmanager
def resolved_once(
    read: SecretReader, namespace: str, name: str | None, hosts: bytes | None = None
) -> Iterator[dict[str, str]]:
    """git's environment for one call; its SSH files are deleted when the block ends.

    For one-shot reads (a tip, a probe): no key outlives the call that needed it.
    """
    with environment_once(with_known_hosts(secret_of(read, namespace, name), hosts)) as env:
        yield env


@contextmanager
def environment_once(secret: Mapping[str, bytes] | None) -> Iterator[dict[str, str]]:
    """git's environment for a Secret already read, for one call, in a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="gitops-reverser-ssh-") as folder:
        yield env_for_secret(secret, Path(folder))
