"""The signing key of a GitTarget's commits, read from its Secret when a window is committed.

Key material never enters Redis (T3): the watcher publishes only the Secret's name
(``TargetConfig.signing_secret``), and the branch's owner reads the Secret when it commits,
writes the key to a private file for that one ``git commit`` and removes it at once
(``shared.git.signing.key_file``). A GitTarget without ``spec.commit.signing`` needs no
Secret and no file. A key that cannot be used raises ``SigningUnavailable``: the caller
commits nothing unsigned for that GitTarget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from shared.git.signing import SigningKeyInvalid, key_file, load_key
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.model.config import TargetConfig

#: The reason a GitTarget shows while its commits cannot be signed (with the watcher's).
SIGNING_KEY_INVALID = "SigningKeyInvalid"


class SigningUnavailable(Exception):
    """The GitTarget asks for signed commits and its key cannot be had now; ``permanent``
    False when the Kubernetes API could not be asked (retry), True when the Secret is gone
    or holds no usable key."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class Signer(Protocol):
    """The private key file a GitTarget's next commit is signed with (None: unsigned)."""

    def __call__(self, target: TargetConfig) -> AbstractContextManager[Path | None]: ...


@contextmanager
def unsigned(target: TargetConfig) -> Iterator[Path | None]:
    """The signer of a worker built without Kubernetes access: no GitTarget that asks for
    signing gets an unsigned commit from it."""
    if target.signing_secret:
        raise SigningUnavailable("this worker cannot read signing keys", permanent=False)
    yield None


class SecretSigner:
    """A Signer that reads ``signing.key`` from the GitTarget's own namespace (T1: a
    GitTarget signs only with a Secret of its own tenant)."""

    def __init__(self, reader: Callable[[], CrdReader]) -> None:
        self._reader = reader  # built on first use: branches without signing need no cluster

    @contextmanager
    def __call__(self, target: TargetConfig) -> Iterator[Path | None]:
        if not target.signing_secret:
            yield None
            return
        where = f"Secret {target.namespace}/{target.signing_secret}"
        try:
            data = self._reader().secret_data(target.namespace, target.signing_secret)
        except KubeError as err:
            raise SigningUnavailable(f"{where} could not be read: {err}", permanent=False) from err
        if data is None:
            raise SigningUnavailable(f"{where} (spec.commit.signing) not found", permanent=True)
        try:
            key = load_key(data)
        except SigningKeyInvalid as err:
            raise SigningUnavailable(f"{where}: {err}", permanent=True) from None
        with key_file(key) as path:
            yield path
