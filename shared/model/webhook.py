"""The webhook applier's endpoint (D7): where a request is POSTed, with which key, how long.

``spec.applier.webhook`` names no Kubernetes object, so its identity (``ApplierRef``) is made
up here: kind ``Webhook``, the GitTarget's ClusterProvider (resolved as for any applier), the
GitTarget's own namespace, and a name derived from the URL and the Secret's name. Two GitTargets
of one namespace that name the same URL and Secret share one applier key, so they are asked
once (A3); the same URL in another namespace is another applier, since its key is another
tenant's Secret. The timeout is a setting, not identity: GitTargets sharing an endpoint wait
the longest of their timeouts.

The endpoint travels beside the identity, as its own record, from the published GitTarget
config to the request (``ApplyRequest.webhook``), so ``ApplierRef`` stays identity-only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The key in the Secret (``spec.applier.webhook.secretRef.name``) that holds the HMAC key.
HMAC_KEY = "hmacKey"
#: The CRD's bound on ``spec.applier.webhook.timeout`` (its default: ``defaults.WEBHOOK_TIMEOUT``).
MAX_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """``spec.applier.webhook``: the URL, the Secret (in the GitTarget's namespace) holding the
    HMAC key under ``hmacKey``, and how long one POST may take."""

    url: str
    secret_name: str
    timeout_s: float

    @property
    def name(self) -> str:
        """The applier's name in its key: stable for one URL and Secret, and no secret."""
        digest = hashlib.sha256(f"{self.url}\0{self.secret_name}".encode()).hexdigest()
        return f"webhook-{digest[:16]}"

    def to_data(self) -> dict[str, Any]:
        """The endpoint as plain JSON data."""
        return {"url": self.url, "secret_name": self.secret_name, "timeout_s": self.timeout_s}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> WebhookEndpoint:
        """The inverse of ``to_data``."""
        return cls(str(data["url"]), str(data["secret_name"]), float(data["timeout_s"]))


def shared_endpoint(endpoints: Iterable[WebhookEndpoint | None]) -> WebhookEndpoint | None:
    """The endpoint several GitTargets share (equal URL and Secret, by their common key),
    with the longest of their timeouts; None when none names a webhook."""
    named = [e for e in endpoints if e is not None]
    if not named:
        return None
    longest = max(e.timeout_s for e in named)
    return WebhookEndpoint(named[0].url, named[0].secret_name, longest)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be POSTed to (the CRD's CEL rules again, T3), or None.

    An http or https URL with a host and no credentials (``user:password@``): the key belongs
    in the Secret, never in a URL that Redis, logs and status would show.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError as err:
        return f"spec.applier.webhook.url does not parse: {err}"
    if parts.scheme not in ("http", "https"):
        return "spec.applier.webhook.url must be an http or https URL"
    if "@" in parts.netloc:
        return "spec.applier.webhook.url must not carry credentials; the key is in the Secret"
    if not parts.hostname:
        return "spec.applier.webhook.url has no host"
    return None
