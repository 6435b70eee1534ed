"""GitTargets' signing keys (``spec.commit.signing``, P6): checked every pass, generated when
asked, and the public half published as ``status.signingPublicKey``.

A GitTarget whose key cannot be used is not served (``Validated=False``, reason
``SigningKeyInvalid``, or ``SigningSecretNotFound``): its watches stop and nothing of it is
committed unsigned, while every other GitTarget, of its branch too, goes on (T4). The Secret is
read from the GitTarget's own namespace only (T1). A key is checked by ssh-keygen once per
content: the outcome is remembered by a digest of the Secret's signing keys, in this process
only, so an unchanged Secret costs one GET a pass and no process.

With ``generateWhenMissing`` a Secret that does not exist is created with a new ed25519 key
and marked (the ``GENERATED`` annotation); a marked Secret without ``signing.key`` gets a new
one (the keys it already has are kept). A Secret that exists without the mark is never written
(the 2026-12-06 probe, N11: a TLS Secret got signing keys, so whoever may write a GitTarget
could have the product change any Secret of the namespace): its own ``signing.key`` is used
when it has one, else the GitTarget is refused with ``SigningSecretNotOwned``. A Secret that
has a bad key is never overwritten.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping

from shared.decide.targets import Verdict
from shared.git.signing import (
    PASSPHRASE,
    PRIVATE_KEY,
    PUBLIC_KEY,
    SigningKey,
    SigningKeyInvalid,
    generate_key,
    load_key,
    secret_data,
)
from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_TARGETS
from shared.kube.secrets import NotMarked, add_secret_keys
from shared.kube.status import StatusWriter
from shared.model.crds import GitTargetView

log = logging.getLogger(__name__)

SIGNING_KEY_INVALID = "SigningKeyInvalid"
SIGNING_SECRET_NOT_FOUND = "SigningSecretNotFound"
SIGNING_SECRET_UNREADABLE = "SigningSecretUnreadable"
#: generateWhenMissing names a Secret that exists, has no key and was not created by us.
SIGNING_SECRET_NOT_OWNED = "SigningSecretNotOwned"
#: Marks a Secret whose key the product generated (a person may back it up and remove it).
GENERATED = "gitopsreverser.io/generated-signing-key"
#: Checked keys remembered at most (one entry per distinct key content seen).
MAX_REMEMBERED = 4096


def _digest(data: Mapping[str, bytes]) -> str:
    h = hashlib.sha256()
    for key in (PRIVATE_KEY, PASSPHRASE, PUBLIC_KEY):
        value = data.get(key, b"")
        h.update(len(value).to_bytes(8, "big") + value)
    return h.hexdigest()


class SigningKeys:
    """The signing verdict and public key of each GitTarget, as one pass finds them."""

    def __init__(self, reader: CrdReader, client: KubeClient, writer: StatusWriter) -> None:
        self._reader = reader
        self._client = client
        self._writer = writer
        #: digest of a Secret's signing keys -> the public key, or why it is not usable.
        self._checked: dict[str, str | SigningKeyInvalid] = {}
        #: uid -> the public key found this pass, to publish after the conditions.
        self._found: dict[str, str] = {}

    def check(self, targets: Iterable[GitTargetView]) -> dict[str, Verdict]:
        """The failing verdict of every GitTarget whose signing key cannot be used, by uid."""
        problems: dict[str, Verdict] = {}
        self._found = {}
        for target in targets:
            if target.signing is None:
                continue
            try:
                self._found[target.meta.uid] = self._public_key(target)
            except _Refused as refused:
                problems[target.meta.uid] = refused.verdict
        return problems

    def _public_key(self, target: GitTargetView) -> str:
        assert target.signing is not None
        ns, name = target.meta.namespace, target.signing.secret_name
        where = f"Secret {ns}/{name} (spec.commit.signing)"
        try:
            data = self._reader.secret_data(ns, name)
        except KubeError as err:
            raise _Refused(SIGNING_SECRET_UNREADABLE, f"{where} could not be read: {err}") from None
        if (data is None or not data.get(PRIVATE_KEY)) and target.signing.generate_when_missing:
            return self._generate(target, where)
        if data is None:
            raise _Refused(SIGNING_SECRET_NOT_FOUND, f"{where} not found")
        digest = _digest(data)
        found = self._checked.get(digest)
        if found is None:
            try:
                found = load_key(data).public
            except SigningKeyInvalid as err:
                found = err
            if len(self._checked) >= MAX_REMEMBERED:
                self._checked.clear()
            self._checked[digest] = found
        if isinstance(found, SigningKeyInvalid):
            raise _Refused(SIGNING_KEY_INVALID, f"{where}: {found}")
        return found

    def _generate(self, target: GitTargetView, where: str) -> str:
        assert target.signing is not None
        comment = f"gitops-reverser {target.meta.namespace}/{target.meta.name}"
        made: list[SigningKey] = []

        def make() -> Mapping[str, bytes]:  # only once the Secret may be written
            made.append(generate_key(comment))
            return secret_data(made[0])

        try:
            written = add_secret_keys(
                self._client,
                target.meta.namespace,
                target.signing.secret_name,
                make,
                {GENERATED: "true"},
            )
        except SigningKeyInvalid as err:
            raise _Refused(SIGNING_KEY_INVALID, f"{where}: {err}") from None
        except NotMarked:
            raise _Refused(
                SIGNING_SECRET_NOT_OWNED,
                f"{where} has no {PRIVATE_KEY} and was not created by gitops-reverser (it lacks"
                f' the annotation {GENERATED}: "true"), so generateWhenMissing does not write'
                f" into it: put a key in it as {PRIVATE_KEY}, or name a Secret that does not"
                " exist yet",
            ) from None
        except KubeError as err:
            raise _Refused(
                SIGNING_SECRET_UNREADABLE, f"{where}: a generated key could not be stored: {err}"
            ) from None
        if not written:  # a key arrived since this pass read the Secret: read it next pass
            raise _Refused(SIGNING_SECRET_UNREADABLE, f"{where} changed while it was read")
        log.info("generated a signing key into %s", where)
        return made[0].public

    def publish(self, targets: Iterable[GitTargetView]) -> None:
        """Write ``status.signingPublicKey`` where it changed (removed when there is none);
        after the conditions, so ``status`` exists."""
        for target in targets:
            found = self._found.get(target.meta.uid, "")
            if found == target.signing_public_key:
                continue
            try:
                self._writer.write_field(
                    GIT_TARGETS, target.meta, "signingPublicKey", found or None
                )
            except KubeError as err:
                log.warning("status.signingPublicKey of %s not written: %s", target.meta.name, err)


class _Refused(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.verdict = Verdict(reason, message)
