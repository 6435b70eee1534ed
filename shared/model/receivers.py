"""Webhook receivers: the record the watcher publishes and the receiver looks up.

The watcher publishes one ``ReceiverRecord`` per GitProvider with ``spec.receiver``, under the
digest of its webhook path; the receiver finds a delivery's GitProvider by that digest alone, so
it needs no Kubernetes watch of its own (R1: it holds no state). The digest is Flux's
(facts: webhooks-git-libs.md §1.6, ``GetWebhookPath``): hex SHA-256 of token + name + namespace,
so the path names no object and cannot be guessed without the token. A record holds the
*name* of the Secret, never its value (R5). The notices a delivery turns into are
``shared.model.notices.PushNotice``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

ReceiverType = Literal["github", "gitea", "gitlab", "bitbucket", "azure-devops", "generic-hmac"]
#: ``spec.receiver.type`` values, as the GitProvider CRD enumerates them.
RECEIVER_TYPES: tuple[ReceiverType, ...] = get_args(ReceiverType)
#: The key of the receiver's Secret that holds the shared webhook token (CRD: ``secretRef``).
TOKEN_KEY = "token"
#: Where every receiver path starts (``status.receiver.webhookPath``).
PATH_PREFIX = "/hook/"


def webhook_digest(token: bytes, name: str, namespace: str) -> str:
    """Hex SHA-256 of token + name + namespace: the last segment of the webhook path."""
    return hashlib.sha256(token + name.encode() + namespace.encode()).hexdigest()


def webhook_path(token: bytes, name: str, namespace: str) -> str:
    """``status.receiver.webhookPath`` of a GitProvider."""
    return PATH_PREFIX + webhook_digest(token, name, namespace)


class RecordError(ValueError):
    """A published receiver record cannot be read (written by another version, or damaged)."""


@dataclass(frozen=True, slots=True)
class ReceiverRecord:
    """What the receiver needs to know about one GitProvider's webhook."""

    provider_namespace: str
    provider_name: str
    type: ReceiverType
    secret_name: str
    url: str
    branches: tuple[str, ...]  # the branch names the GitProvider's GitTargets use

    @property
    def provider(self) -> str:
        """``namespace/name`` of the GitProvider, as logs and notices name it."""
        return f"{self.provider_namespace}/{self.provider_name}"

    def to_json(self) -> str:
        """The record as stored in Redis."""
        return json.dumps(
            {
                "provider_namespace": self.provider_namespace,
                "provider_name": self.provider_name,
                "type": self.type,
                "secret_name": self.secret_name,
                "url": self.url,
                "branches": sorted(self.branches),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> ReceiverRecord:
        """Read a stored record; RecordError when it is not one."""
        try:
            raw: Any = json.loads(text)
        except ValueError as err:
            raise RecordError(f"not JSON: {err}") from err
        if not isinstance(raw, dict) or raw.get("type") not in RECEIVER_TYPES:
            raise RecordError("not a receiver record")
        fields = ("provider_namespace", "provider_name", "secret_name", "url")
        values = {name: raw.get(name) for name in fields}
        branches = raw.get("branches")
        if not all(isinstance(v, str) for v in values.values()) or not isinstance(branches, list):
            raise RecordError("a receiver record field has the wrong type")
        return cls(
            provider_namespace=str(values["provider_namespace"]),
            provider_name=str(values["provider_name"]),
            type=cast(ReceiverType, raw["type"]),
            secret_name=str(values["secret_name"]),
            url=str(values["url"]),
            branches=tuple(str(b) for b in branches),
        )
