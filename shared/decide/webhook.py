"""The webhook applier's rules (D7, S2): is it configured, and what one request says.

Pure: the Secret's data and the clock's reading come in as arguments. The body and its
signature are documented for receivers in ``docs/crds.md`` ("The webhook applier"); a receiver
verifies a request with nothing but that page, so any change here is a change of that contract.

- body: compact JSON with sorted keys naming the repository, branch, commit, each reason with
  the GitTarget uids holding it, and the token;
- ``X-GitOps-Reverser-Timestamp``: the Unix time (whole seconds) the request was signed;
- ``X-GitOps-Reverser-Signature``: ``sha256=`` and the hex HMAC-SHA256, keyed with the Secret's
  ``hmacKey``, of the timestamp, a ``.``, and the raw body. Signing the timestamp lets a
  receiver refuse a replayed request (an old timestamp), and the token lets it refuse a
  duplicate.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence

from shared.decide.applier_check import Subject, configured
from shared.decide.conditions import FALSE, Wanted
from shared.decide.targets import APPLIER_CONFIGURED, INVALID_APPLIER
from shared.model.appliers import Reason
from shared.model.webhook import HMAC_KEY, WebhookEndpoint, url_problem

SECRET_NOT_FOUND = "SecretNotFound"
SECRET_KEY_NOT_FOUND = "SecretKeyNotFound"

SIGNATURE_HEADER = "X-GitOps-Reverser-Signature"
TIMESTAMP_HEADER = "X-GitOps-Reverser-Timestamp"
TOKEN_HEADER = "X-GitOps-Reverser-Token"
API_VERSION = "gitopsreverser.io/v1alpha1"
BODY_KIND = "ApplyRequest"


def secret_problem(
    endpoint: WebhookEndpoint, namespace: str, secret: Mapping[str, bytes] | None
) -> tuple[str, str] | None:
    """The ApplierConfigured reason and message when the key cannot be had, else None."""
    where = f"Secret {namespace}/{endpoint.secret_name}"
    if secret is None:
        return SECRET_NOT_FOUND, f"{where} (the webhook's HMAC key) not found"
    if not secret.get(HMAC_KEY):
        return SECRET_KEY_NOT_FOUND, f"{where} has no non-empty key {HMAC_KEY}"
    return None


def check_webhook(
    subject: Subject, endpoint: WebhookEndpoint | None, secret: Mapping[str, bytes] | None
) -> Wanted:
    """S2 for a webhook: the URL is usable and the Secret holds the key."""
    if endpoint is None:
        return Wanted(APPLIER_CONFIGURED, FALSE, INVALID_APPLIER, "no spec.applier.webhook")
    bad_url = url_problem(endpoint.url)
    if bad_url is not None:
        return Wanted(APPLIER_CONFIGURED, FALSE, INVALID_APPLIER, bad_url)
    problem = secret_problem(endpoint, subject.namespace, secret)
    if problem is not None:
        return Wanted(APPLIER_CONFIGURED, FALSE, *problem)
    return configured(subject)


def body(
    url: str, branch: str, commit: str, reasons: Mapping[Reason, Sequence[str]], token: str
) -> bytes:
    """The request's body, byte for byte what is signed and sent."""
    data = {
        "apiVersion": API_VERSION,
        "kind": BODY_KIND,
        "repository": url,
        "branch": branch,
        "commit": commit,
        "reasons": {reason: sorted(uids) for reason, uids in reasons.items()},
        "token": token,
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def signature(key: bytes, timestamp: int, raw_body: bytes) -> str:
    """``sha256=`` and the hex HMAC-SHA256 of ``<timestamp>.<body>``."""
    signed = str(timestamp).encode() + b"." + raw_body
    return "sha256=" + hmac.new(key, signed, hashlib.sha256).hexdigest()


def headers(key: bytes, token: str, timestamp: int, raw_body: bytes) -> dict[str, str]:
    """Every header of one request."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "gitops-reverser",
        TOKEN_HEADER: token,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(key, timestamp, raw_body),
    }


def delivered(status: int) -> bool:
    """D7: a 2xx answer is Delivered; anything else (a redirect too) is Failed."""
    return 200 <= status < 300
