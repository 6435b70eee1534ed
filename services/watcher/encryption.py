"""Secrets sealed before they leave the watcher (P3): no plaintext ever reaches Redis.

A GitTarget with ``spec.encryption`` has its Secrets published as SOPS documents
(``shared.model.sops``): the watcher is the only process that reads a Secret's payload, so it
encrypts at once, for the recipients the GitTarget names (its list and the recipients Secret in
its own namespace, T1), and the event stream, the branch worker and Git only ever hold
ciphertext. Nothing here decrypts.

The fingerprint that lets the writer skip a no-op (M3) is keyed per GitTarget from a key that
lives only in the cluster: the Secret ``settings.sops_fingerprint_secret`` (key ``key``) in the
product's namespace, read on every pass. The watcher creates it when it is missing
(create-if-absent: the first watcher writes it, another one that raced reads that one), so the
chart never renders a key and no upgrade or GitOps sync can rotate it. Only when it can be
neither read nor created does a process use a random key of its own: fingerprints then do not
survive a restart, and each Secret's next event re-encrypts it once (a commit whose plaintext
did not change), never a wrong file.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from shared.kube.api import KubeClient
from shared.kube.crds import CrdReader
from shared.kube.errors import KubeError
from shared.kube.install_secrets import ensure_secret_key
from shared.model.crds import GitTargetView
from shared.model.sops import RandomBytes, SopsError, parse_recipients, seal

logger = logging.getLogger(__name__)

#: The data key of the fingerprint Secret.
FINGERPRINT_KEY = "key"
#: Bytes of a fingerprint key (the cluster's when created, or a process's own).
RANDOM_KEY_BYTES = 32
#: The annotation on a fingerprint Secret the watcher created.
GENERATED = "gitopsreverser.io/generated"


class Sealer:
    """Seals Secrets for a GitTarget's recipients; holds the fingerprint master key."""

    def __init__(
        self,
        master: bytes | None = None,
        *,
        clock: Callable[[], float] = time.time,
        random: RandomBytes = os.urandom,
    ) -> None:
        self._clock = clock  # ``lastmodified`` of each sealing
        self._random = random  # data keys, nonces and the key of a process without the Secret
        self._master = master or random(RANDOM_KEY_BYTES)
        self._from_cluster = master is not None

    def use_master(self, master: bytes | None) -> None:
        """The cluster's key (None: it is missing; keep this process's random one)."""
        if master:
            if not self._from_cluster:
                logger.info("SOPS fingerprints use the cluster's fingerprint key")
            self._master, self._from_cluster = master, True
        elif self._from_cluster:
            logger.warning("the SOPS fingerprint Secret is gone; keeping the last key")

    def key_for(self, target_uid: str) -> bytes:
        """The GitTarget's own fingerprint key (one tenant's fingerprints say nothing about
        another's)."""
        return hmac.new(
            self._master, f"sops-fingerprint\0{target_uid}".encode(), hashlib.sha256
        ).digest()

    def seal(
        self, doc: Mapping[str, Any], recipients: tuple[str, ...], target_uid: str
    ) -> dict[str, Any]:
        """The SOPS document of a sanitised Secret, sealed now."""
        return seal(
            doc,
            recipients,
            now=datetime.fromtimestamp(self._clock(), UTC),
            random=self._random,
            fingerprint_key=self.key_for(target_uid),
        )


def ensure_master(
    client: KubeClient, namespace: str, name: str, random: RandomBytes = os.urandom
) -> bytes | None:
    """The fingerprint master key from the cluster, created there first when missing; None
    when it can be neither read nor created (the caller keeps the key it has)."""
    if not name:
        return None
    try:
        return ensure_secret_key(
            client,
            namespace,
            name,
            FINGERPRINT_KEY,
            make=lambda: random(RANDOM_KEY_BYTES),
            annotations={GENERATED: "true"},
        )
    except KubeError as err:
        logger.warning("cannot read or create the SOPS fingerprint Secret: %s", type(err).__name__)
        return None


def with_recipients(targets: list[GitTargetView], reader: CrdReader) -> list[GitTargetView]:
    """Each GitTarget with the recipients of its ``recipientsSecretRef`` added (read in its
    own namespace), or the reason they cannot be used as its encryption problem."""
    resolved = []
    for target in targets:
        enc = target.encryption
        if enc is None or enc.problem or not enc.secret_name:
            resolved.append(target)
            continue
        data = reader.secret_data(target.meta.namespace, enc.secret_name)
        where = f"Secret {target.meta.namespace}/{enc.secret_name}"
        problem, recipients = "", enc.recipients
        if data is None:
            problem = f"{where} (spec.encryption.age.recipientsSecretRef) not found"
        elif enc.secret_key not in data:
            problem = f"{where} has no key {enc.secret_key!r}"
        else:
            try:
                text = data[enc.secret_key].decode("utf-8", "replace")
                recipients = tuple(sorted({*enc.recipients, *parse_recipients(text)}))
            except SopsError as err:
                problem = f"{where} key {enc.secret_key!r}: {err}"
        resolved.append(
            replace(target, encryption=replace(enc, recipients=recipients, problem=problem))
        )
    return resolved
