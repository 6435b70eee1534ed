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

from shared.git.auth import env_for_secret
from shared.git.errors import GitPermanent

#: Reads a Secret's data by (namespace, name); None when it does not exist.
SecretReader = Callable[[str, str], Mapping[str, bytes] | None]


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
    read: SecretReader, namespace: str, name: str | None, ssh_folder: Path
) -> dict[str, str]:
    """git's environment for the remote of a GitProvider whose Secret is ``namespace/name``.

    For callers that keep a working copy: the SSH files stay in ``ssh_folder`` for later calls.
    """
    return env_for_secret(secret_of(read, namespace, name), ssh_folder)


@contextmanager
def resolved_once(read: SecretReader, namespace: str, name: str | None) -> Iterator[dict[str, str]]:
    """git's environment for one call; its SSH files are deleted when the block ends.

    For one-shot reads (a tip, a probe): no key outlives the call that needed it.
    """
    with environment_once(secret_of(read, namespace, name)) as env:
        yield env


@contextmanager
def environment_once(secret: Mapping[str, bytes] | None) -> Iterator[dict[str, str]]:
    """git's environment for a Secret already read, for one call, in a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="gitops-reverser-ssh-") as folder:
        yield env_for_secret(secret, Path(folder))
