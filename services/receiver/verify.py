"""Is a delivery really from the Git host? One pure verifier per ``spec.receiver.type`` (R2).

Each verifier takes the request headers, the raw body as received, its content type and the
shared secret, and answers ``Verified`` (with the JSON document the signature vouches for) or
``Refused`` (with a reason safe to show the sender). Rules that hold for all of them:

- the comparison is constant-time (``hmac.compare_digest``), over bytes;
- an empty secret or an empty/absent signature is refused: go-github skips the check when
  both are empty (facts: webhooks-git-libs.md §1.1), we never do;
- the JSON is taken out of a form body's ``payload`` field only after the check passed,
  except for Gitea/Forgejo, whose signature covers that field's decoded value (§1.2, §1.3).

What each host signs (facts §1.1-1.6):

- ``github``: ``X-Hub-Signature-256: sha256=<hex>`` over the raw body, also the raw
  ``payload=...`` form body;
- ``gitea``: bare hex in ``X-Forgejo-Signature`` > ``X-Gitea-Signature`` > (prefixed)
  ``X-Hub-Signature-256``, over the JSON, which for a form delivery is the decoded ``payload``;
- ``gitlab``: ``X-Gitlab-Token`` is the secret itself (no signature over the body);
- ``bitbucket``: ``X-Hub-Signature: sha256=<hex>`` over the raw body (a SHA-256 value under
  GitHub's SHA-1 header name);
- ``generic-hmac``: ``X-Signature: sha256=<hex>`` over the raw body.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from shared.model.receivers import ReceiverType

FORM = "application/x-www-form-urlencoded"
#: A SHA-256 HMAC in hex, the only form accepted (no SHA-1: it is the weaker legacy header).
_HEX256 = re.compile(r"[0-9a-fA-F]{64}")
#: Form fields parsed at most; a webhook form has one (``payload``).
_MAX_FORM_FIELDS = 16


@dataclass(frozen=True, slots=True)
class Verified:
    """The delivery is authentic; ``document`` is the JSON text it carries (not yet parsed)."""

    document: bytes


@dataclass(frozen=True, slots=True)
class Refused:
    """The delivery is not shown to be authentic; ``reason`` names no secret."""

    reason: str


Verdict = Verified | Refused
Verifier = Callable[[Mapping[str, str], bytes, str, bytes], Verdict]


class CaseFolded(Mapping[str, str]):
    """Request headers looked up by lower-case name, as the app hands them over: ``header``
    finds a name here with one lookup, present or not, and never scans the others."""


def header(headers: Mapping[str, str], name: str) -> str:
    """A header's value by case-insensitive name ("" when absent).

    One lookup in a ``CaseFolded`` mapping (what the app passes); any other mapping is
    searched when the lower-case name is not a key.
    """
    wanted = name.lower()
    value = headers.get(wanted)
    if value is not None:
        return value
    if isinstance(headers, CaseFolded):
        return ""
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def media_type(content_type: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return content_type.split(";", 1)[0].strip().lower()


def form_payload(body: bytes) -> bytes | None:
    """The decoded ``payload`` field of a urlencoded body; None when absent or repeated."""
    try:
        pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=_MAX_FORM_FIELDS)
    except ValueError:
        return None
    values = [value for name, value in pairs if name == b"payload"]
    return values[0] if len(values) == 1 else None


def _wire_bytes(value: str) -> bytes:
    """A header value's bytes as sent: WSGI hands headers over decoded as latin-1 (PEP 3333)."""
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace")


def _hmac_matches(secret: bytes, data: bytes, hex_signature: str) -> bool:
    if not _HEX256.fullmatch(hex_signature):
        return False
    expected = hmac.digest(secret, data, "sha256")  # one C call; hmac.new is Python on top
    return hmac.compare_digest(expected, bytes.fromhex(hex_signature))


def _prefixed(value: str) -> str | None:
    """The hex of ``sha256=<hex>``; None for another algorithm or no prefix."""
    algorithm, sep, hex_part = value.strip().partition("=")
    if not sep or algorithm.lower() != "sha256":
        return None
    return hex_part


def _check(secret: bytes, data: bytes, hex_signature: str | None, name: str) -> Refused | None:
    if not secret:
        return Refused("the receiver has no usable secret")
    if not hex_signature:
        return Refused(f"no {name} signature")
    if not _hmac_matches(secret, data, hex_signature):
        return Refused(f"{name} signature does not match")
    return None


def _raw_body_document(body: bytes, content_type: str) -> bytes:
    """The JSON of a verified raw body: itself, or its form's ``payload`` (empty if none)."""
    if media_type(content_type) == FORM:
        return form_payload(body) or b""
    return body


def verify_github(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """GitHub: HMAC-SHA256 of the raw body (the form body as sent, for form deliveries)."""
    signature = header(headers, "X-Hub-Signature-256")
    refused = _check(secret, body, _prefixed(signature) if signature else "", "X-Hub-Signature-256")
    return refused or Verified(_raw_body_document(body, content_type))


def _gitea_signature(headers: Mapping[str, str]) -> str:
    for name in ("X-Forgejo-Signature", "X-Gitea-Signature"):
        value = header(headers, name).strip()
        if value:
            return value
    hub = header(headers, "X-Hub-Signature-256")
    return (_prefixed(hub) or "") if hub else ""


def verify_gitea(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """Gitea and Forgejo: HMAC-SHA256 of the JSON, which a form delivery carries in ``payload``."""
    signed = body
    if media_type(content_type) == FORM:
        payload = form_payload(body)
        if payload is None:
            return Refused("form delivery without a single payload field")
        signed = payload
    refused = _check(secret, signed, _gitea_signature(headers), "Gitea/Forgejo")
    return refused or Verified(signed)


def verify_gitlab(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """GitLab: ``X-Gitlab-Token`` must equal the secret (compared in constant time)."""
    if not secret:
        return Refused("the receiver has no usable secret")
    token = header(headers, "X-Gitlab-Token")
    if not token:
        return Refused("no X-Gitlab-Token")
    if not hmac.compare_digest(_wire_bytes(token), secret):
        return Refused("X-Gitlab-Token does not match")
    return Verified(body)


def verify_bitbucket(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """Bitbucket Cloud and Data Center: ``X-Hub-Signature: sha256=<hex>`` over the raw body."""
    signature = header(headers, "X-Hub-Signature")
    refused = _check(secret, body, _prefixed(signature) if signature else "", "X-Hub-Signature")
    return refused or Verified(_raw_body_document(body, content_type))


def verify_generic_hmac(
    headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """Any sender: ``X-Signature: sha256=<hex>`` over the raw body (Flux's generic-hmac)."""
    signature = header(headers, "X-Signature")
    refused = _check(secret, body, _prefixed(signature) if signature else "", "X-Signature")
    return refused or Verified(body)


_VERIFIERS: dict[ReceiverType, Verifier] = {
    "github": verify_github,
    "gitea": verify_gitea,
    "gitlab": verify_gitlab,
    "bitbucket": verify_bitbucket,
    "generic-hmac": verify_generic_hmac,
}


def verifier_for(kind: ReceiverType) -> Verifier:
    """The verifier of a ``spec.receiver.type``."""
    return _VERIFIERS[kind]


def verify(
    kind: ReceiverType, headers: Mapping[str, str], body: bytes, content_type: str, secret: bytes
) -> Verdict:
    """Verify a delivery with the verifier of its receiver's type."""
    return verifier_for(kind)(headers, body, content_type, secret)
