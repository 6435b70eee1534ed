"""Is a delivery really from the Git host? One pure verifier per ``spec.receiver.type`` (R2).

Each verifier takes the request headers, the raw body as received, its content type and the
shared secret, and answers ``Verified`` (with the JSON document the signature vouches for) or
``Refused`` (with a reason safe to show the sender). Rules that hold for all of them (built
from ``services.receiver.signatures``):

- the comparison is constant-time (``hmac.compare_digest``), over bytes;
- an empty secret or an empty/absent signature is refused: go-github skips the check when
  both are empty (facts: webhooks-git-libs.md §1.1), we never do;
- the JSON is taken out of a form body's ``payload`` field only after the check passed,
  except for Gitea/Forgejo, whose signature covers that field's decoded value (§1.2, §1.3).

What each host signs is in its module under ``services.receiver.hosts`` (github, gitea,
gitlab, bitbucket, generic_hmac); this module picks the verifier from the Git-host table.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.receiver.hosts import host_of
from services.receiver.signatures import (
    FORM,
    CaseFolded,
    Refused,
    Verdict,
    Verified,
    Verifier,
    form_payload,
    header,
    media_type,
)
from shared.model.receivers import ReceiverType

__all__ = [
    "FORM",
    "CaseFolded",
    "Refused",
    "Verdict",
    "Verified",
    "Verifier",
    "form_payload",
    "header",
    "media_type",
    "verifier_for",
    "verify",
]


def verifier_for(kind: ReceiverType) -> Verifier:
    """The verifier of a ``spec.receiver.type``."""
    return host_of(kind).verify


def verify(
    kind: ReceiverType, headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """Verify a delivery with the verifier of its receiver's type."""
    return host_of(kind).verify(headers, body, content_type, secret)
